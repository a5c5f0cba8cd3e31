/* A profconv plugin in C, written from docs/plugin-abi.md alone (with profconv_abi.h, the
   doc's tables transcribed, its sizes and offsets checked by _Static_assert): format "tabs"
   (lines `a/b/c<TAB>count`: read, write, detect, an option check) and "jstacks" (a JSON list of
   stacks, write only). With `-O crash` the tabs writer crashes, for the host's fault handling;
   with `-O probe` it first reads an unmapped address through a fault handler of its own, as a
   runtime in a plugin does (Go, a JVM, a wasm engine: installed when the library is loaded,
   recovering the faults it expects and handing the others to the handler in place before).
   Built and run by cli/tests/c_plugin.rs. */
#define _XOPEN_SOURCE 700
#include "profconv_abi.h"
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <stdint.h>

/* ---------- growable arrays ---------- */
typedef struct { void *p; size_t n, cap, el; } Vec;
static int vpush(Vec *v, const void *x) {
  if (v->n == v->cap) { size_t c = v->cap ? v->cap * 2 : 16; void *q = realloc(v->p, c * v->el); if (!q) return 0; v->p = q; v->cap = c; }
  memcpy((char *)v->p + v->n * v->el, x, v->el); v->n++; return 1;
}
#define VEC(T) ((Vec){0,0,0,sizeof(T)})
#define AT(v,T,i) (((T*)(v).p)[i])

/* ---------- profile under construction ---------- */
typedef struct {
  Vec blob, offs;         /* u8, u64 */
  Vec func_name, func_none32, frame_func, frame_addr, frame_line_none;
  Vec stack_prefix, stack_frame;
  Vec sample_stack, sample_val;
  /* hash tables: string -> id, (prefix,frame) -> stack */
  uint32_t *sh; size_t shcap; uint32_t *kh; size_t khcap;
  uint32_t vt_name, vt_unit, vt_kind, vt_dec;
  const int64_t *values_ptrs[1];
} Prof;

static uint64_t fnv(const uint8_t *p, size_t n) { uint64_t h = 1469598103934665603ull; for (size_t i = 0; i < n; i++) { h ^= p[i]; h *= 1099511628211ull; } return h; }

static int grow_sh(Prof *P);
static uint32_t intern(Prof *P, const uint8_t *s, size_t n) {
  if ((P->offs.n) * 2 >= P->shcap) if (!grow_sh(P)) return NONE32;
  size_t m = P->shcap - 1, i = fnv(s, n) & m;
  for (;; i = (i + 1) & m) {
    uint32_t id = P->sh[i];
    if (id == NONE32) break;
    uint64_t a = AT(P->offs, uint64_t, id), b = AT(P->offs, uint64_t, id + 1);
    if (b - a == n && memcmp((uint8_t *)P->blob.p + a, s, n) == 0) return id;
  }
  uint32_t id = (uint32_t)(P->offs.n - 1);
  for (size_t k = 0; k < n; k++) if (!vpush(&P->blob, &s[k])) return NONE32;
  uint64_t e = P->blob.n; if (!vpush(&P->offs, &e)) return NONE32;
  P->sh[i] = id; return id;
}
static int grow_sh(Prof *P) {
  size_t nc = P->shcap ? P->shcap * 2 : 64; uint32_t *t = malloc(nc * 4); if (!t) return 0;
  memset(t, 0xff, nc * 4);
  for (uint32_t id = 0; id + 1 < P->offs.n; id++) {
    uint64_t a = AT(P->offs, uint64_t, id), b = AT(P->offs, uint64_t, id + 1);
    size_t i = fnv((uint8_t *)P->blob.p + a, b - a) & (nc - 1);
    while (t[i] != NONE32) i = (i + 1) & (nc - 1);
    t[i] = id;
  }
  free(P->sh); P->sh = t; P->shcap = nc; return 1;
}
static int grow_kh(Prof *P);
static uint32_t stack_for(Prof *P, uint32_t prefix, uint32_t frame) {
  if (P->stack_frame.n * 2 >= P->khcap) if (!grow_kh(P)) return NONE32;
  size_t m = P->khcap - 1, i = (((uint64_t)prefix << 32 | frame) * 0x9E3779B97F4A7C15ull >> 20) & m;
  for (;; i = (i + 1) & m) {
    uint32_t id = P->kh[i];
    if (id == NONE32) break;
    if (AT(P->stack_prefix, uint32_t, id) == prefix && AT(P->stack_frame, uint32_t, id) == frame) return id;
  }
  uint32_t id = (uint32_t)P->stack_frame.n;
  if (!vpush(&P->stack_prefix, &prefix) || !vpush(&P->stack_frame, &frame)) return NONE32;
  P->kh[i] = id; return id;
}
static int grow_kh(Prof *P) {
  size_t nc = P->khcap ? P->khcap * 2 : 64; uint32_t *t = malloc(nc * 4); if (!t) return 0;
  memset(t, 0xff, nc * 4);
  for (uint32_t id = 0; id < P->stack_frame.n; id++) {
    uint64_t k = (uint64_t)AT(P->stack_prefix, uint32_t, id) << 32 | AT(P->stack_frame, uint32_t, id);
    size_t i = (k * 0x9E3779B97F4A7C15ull >> 20) & (nc - 1);
    while (t[i] != NONE32) i = (i + 1) & (nc - 1);
    t[i] = id;
  }
  free(P->kh); P->kh = t; P->khcap = nc; return 1;
}

static void prof_free(Prof *P) {
  free(P->blob.p); free(P->offs.p); free(P->func_name.p); free(P->func_none32.p); free(P->frame_func.p);
  free(P->frame_addr.p); free(P->frame_line_none.p); free(P->stack_prefix.p); free(P->stack_frame.p);
  free(P->sample_stack.p); free(P->sample_val.p); free(P->sh); free(P->kh); free(P);
}

static void release_export(ProfileExport *e) {
  if (!e || !e->release) return;
  prof_free((Prof *)e->private_data);
  e->release = NULL; e->private_data = NULL;
}

/* ---------- helpers ---------- */
static void report(const HostCallbacks *h, Status st, const char *msg, uint64_t off, uint64_t line, uint64_t col) {
  if (h && h->report_error) h->report_error(h->ctx, st, (StrRef){(const uint8_t *)msg, strlen(msg)}, off, line, col);
}
static void logmsg(const HostCallbacks *h, uint32_t lvl, const char *msg) {
  if (h && h->log) h->log(h->ctx, lvl, (StrRef){(const uint8_t *)msg, strlen(msg)});
}
static int opt_get(const OptionValue *o, size_t n, const char *key, StrRef *out) {
  int found = 0; size_t kl = strlen(key);
  for (size_t i = 0; i < n; i++) if (o[i].key.len == kl && memcmp(o[i].key.ptr, key, kl) == 0) { *out = o[i].value; found = 1; }
  return found;
}
static StrRef sep_option(const OptionValue *o, size_t n) {
  StrRef v; if (opt_get(o, n, "sep", &v) && v.ptr) return v; return S("/");
}

/* ---------- sniff ---------- */
static uint32_t tabs_sniff(const uint8_t *head, size_t len) {
  /* As a Rust plugin built with panic = "abort" ends the process at a panic (test fixture). */
  if (getenv("CTABS_ABORT_IN_SNIFF")) abort();
  if (!head || len == 0) return 0;
  /* first line: something, a TAB, then digits */
  size_t i = 0; while (i < len && head[i] != '\n' && head[i] != '\t') i++;
  if (i == 0 || i >= len || head[i] != '\t') return 0;
  size_t j = i + 1, d = 0; while (j < len && head[j] >= '0' && head[j] <= '9') { j++; d++; }
  if (d == 0) return 0;
  if (j < len && head[j] != '\n' && head[j] != '\r') return 0;
  return 80;
}
static Status tabs_sniff_checked(const uint8_t *head, size_t len, uint32_t *score) {
  if (!score) return ST_INTERNAL;
  *score = tabs_sniff(head, len); return ST_OK;
}

static Status tabs_check(const OptionValue *o, size_t n, uint32_t phase, const HostCallbacks *h) {
  StrRef v;
  if (phase != PHASE_PARSE && phase != PHASE_EMIT) return ST_INTERNAL;
  if (opt_get(o, n, "sep", &v) && v.len == 0) { report(h, ST_BAD_OPTIONS, "option 'sep' must not be empty", NONE64, NONE64, NONE64); return ST_BAD_OPTIONS; }
  return ST_OK;
}

/* ---------- parse ---------- */
static Status tabs_parse(const OptionValue *o, size_t n, const InputStream *in, const HostCallbacks *h, ProfileExport *out) {
  StrRef sep = sep_option(o, n);
  const uint8_t *data; size_t len; uint8_t *owned = NULL;
  if (in->whole.ptr) { data = in->whole.ptr; len = in->whole.len; }
  else {
    size_t cap = 1 << 16; len = 0; owned = malloc(cap);
    for (;;) {
      if (len == cap) { cap *= 2; uint8_t *q = realloc(owned, cap); if (!q) { free(owned); report(h, ST_INTERNAL, "out of memory", NONE64, NONE64, NONE64); return ST_INTERNAL; } owned = q; }
      size_t got = 0; Status st = in->read(in->ctx, owned + len, cap - len, &got);
      if (st != ST_OK) { free(owned); return st; }
      if (got == 0) break;
      len += got;
    }
    data = owned;
  }
  Prof *P = calloc(1, sizeof *P);
  P->blob = VEC(uint8_t); P->offs = VEC(uint64_t); P->func_name = VEC(uint32_t); P->func_none32 = VEC(uint32_t);
  P->frame_func = VEC(uint32_t); P->frame_addr = VEC(uint64_t); P->frame_line_none = VEC(uint32_t);
  P->stack_prefix = VEC(uint32_t); P->stack_frame = VEC(uint32_t); P->sample_stack = VEC(uint32_t); P->sample_val = VEC(int64_t);
  uint64_t zero = 0; vpush(&P->offs, &zero);
  Vec s2f = VEC(uint32_t); /* string id -> func (= frame) */
  uint32_t none = NONE32; uint64_t none64 = NONE64;
  P->vt_name = intern(P, (const uint8_t *)"samples", 7); P->vt_unit = intern(P, (const uint8_t *)"count", 5);
  P->vt_kind = 0; P->vt_dec = 0;
  size_t pos = 0; uint64_t lineno = 0; Status err = ST_OK;
  while (pos < len) {
    lineno++;
    size_t e = pos; while (e < len && data[e] != '\n') e++;
    size_t le = e; if (le > pos && data[le - 1] == '\r') le--;
    if (le == pos) { logmsg(h, 1, "skipped an empty line"); pos = e + 1; continue; }
    size_t tab = le; while (tab > pos && data[tab - 1] != '\t') tab--;
    if (tab == pos) { report(h, ST_INVALID_INPUT, "no TAB before the count", pos, lineno, 1); err = ST_INVALID_INPUT; break; }
    int64_t cnt = 0; size_t k = tab;
    if (k == le) { report(h, ST_INVALID_INPUT, "missing count", k, lineno, k - pos + 1); err = ST_INVALID_INPUT; break; }
    for (; k < le; k++) {
      if (data[k] < '0' || data[k] > '9') { report(h, ST_INVALID_INPUT, "count is not a number", k, lineno, k - pos + 1); err = ST_INVALID_INPUT; break; }
      if (cnt > (INT64_MAX - 9) / 10) { report(h, ST_INVALID_INPUT, "count too large", k, lineno, k - pos + 1); err = ST_INVALID_INPUT; break; }
      cnt = cnt * 10 + (data[k] - '0');
    }
    if (err) break;
    size_t pe = tab - 1; /* path = [pos, pe) */
    uint32_t stack = NONE32; size_t a = pos;
    while (a <= pe) {
      size_t b = a;
      while (b < pe && !(pe - b >= sep.len && memcmp(data + b, sep.ptr, sep.len) == 0)) b++;
      if (b > a) {
        uint32_t sid = intern(P, data + a, b - a);
        while (s2f.n <= sid) vpush(&s2f, &none);
        uint32_t f = AT(s2f, uint32_t, sid);
        if (f == NONE32) {
          f = (uint32_t)P->func_name.n; AT(s2f, uint32_t, sid) = f;
          vpush(&P->func_name, &sid); vpush(&P->func_none32, &none);
          vpush(&P->frame_func, &f); vpush(&P->frame_addr, &none64); vpush(&P->frame_line_none, &none);
        }
        stack = stack_for(P, stack, f);
      }
      if (b >= pe) break;
      a = b + sep.len;
    }
    if (stack == NONE32) { report(h, ST_INVALID_INPUT, "empty stack", pos, lineno, 1); err = ST_INVALID_INPUT; break; }
    vpush(&P->sample_stack, &stack); vpush(&P->sample_val, &cnt);
    pos = e + 1;
  }
  free(s2f.p); free(owned);
  if (err) { prof_free(P); return err; }
  P->values_ptrs[0] = (const int64_t *)P->sample_val.p;
  ProfileView *v = &out->view;
  memset(out, 0, sizeof *out);
  v->struct_size = sizeof(ProfileView); v->flags = 0;
  v->n_strings = P->offs.n - 1; v->str_offsets = P->offs.p; v->str_blob = P->blob.p; v->str_blob_len = P->blob.n;
  v->n_funcs = P->func_name.n; v->func_name = P->func_name.p; v->func_file = P->func_none32.p; v->func_line = P->func_none32.p; v->func_resource = P->func_none32.p;
  v->n_frames = P->frame_func.n; v->frame_func = P->frame_func.p; v->frame_address = P->frame_addr.p; v->frame_line = P->frame_line_none.p;
  v->n_stacks = P->stack_frame.n; v->stack_prefix = P->stack_prefix.p; v->stack_frame = P->stack_frame.p;
  v->n_value_types = 1; v->value_type_name = &P->vt_name; v->value_type_unit = &P->vt_unit; v->value_type_kind = &P->vt_kind; v->value_type_decimals = &P->vt_dec;
  v->n_samples = P->sample_stack.n; v->sample_stack = P->sample_stack.p; v->sample_time = NULL; v->sample_values = P->values_ptrs;
  v->n_meta = 0; v->n_threads = 0; v->sample_thread = NULL;
  out->release = release_export; out->private_data = P;
  return ST_OK;
}

/* ---------- a runtime's fault handler ---------- */
static struct sigaction runtime_previous;
static volatile sig_atomic_t probing;
static sigjmp_buf probe_env;
static void runtime_on_segv(int sig) {
  if (probing) siglongjmp(probe_env, 1);
  /* Not a fault it expects: to the handler in place before, which the fault meets on return. */
  sigaction(sig, &runtime_previous, NULL);
}
__attribute__((constructor)) static void runtime_init(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = runtime_on_segv; sa.sa_flags = SA_ONSTACK; sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &runtime_previous);
}
/* Whether reading `p` faults, recovered by the handler above. */
static int faults(const volatile int *p) {
  int faulted = 1;
  probing = 1;
  if (sigsetjmp(probe_env, 1) == 0) { (void)*p; faulted = 0; }
  probing = 0;
  return faulted;
}

/* ---------- emit ---------- */
typedef struct { const OutputStream *o; uint8_t buf[65536]; size_t n; Status st; } W;
static void wflush(W *w) { if (w->n && w->st == ST_OK) w->st = w->o->write(w->o->ctx, w->buf, w->n); w->n = 0; }
static void wbytes(W *w, const void *p, size_t n) {
  const uint8_t *s = p;
  while (n) { size_t k = sizeof w->buf - w->n; if (k > n) k = n; memcpy(w->buf + w->n, s, k); w->n += k; s += k; n -= k; if (w->n == sizeof w->buf) wflush(w); }
}
static void wstr(W *w, const char *s) { wbytes(w, s, strlen(s)); }
static StrRef vstr(const ProfileView *v, uint32_t id) { return (StrRef){ v->str_blob + v->str_offsets[id], v->str_offsets[id + 1] - v->str_offsets[id] }; }

static int pick_value(const ProfileView *v, const OptionValue *o, size_t n, const HostCallbacks *h, size_t *vt) {
  StrRef want;
  if (v->n_value_types == 0) { report(h, ST_UNSUPPORTED, "profile has no value types", NONE64, NONE64, NONE64); return 0; }
  if (opt_get(o, n, "value", &want) && want.ptr) {
    for (size_t i = 0; i < v->n_value_types; i++) { StrRef s = vstr(v, v->value_type_name[i]); if (s.len == want.len && memcmp(s.ptr, want.ptr, s.len) == 0) { *vt = i; return 1; } }
    report(h, ST_BAD_OPTIONS, "no value type of that name", NONE64, NONE64, NONE64); return 0;
  }
  for (size_t i = 0; i < v->n_value_types; i++) if (v->value_type_kind[i] == 0) { *vt = i; return 1; }
  *vt = 0; return 1;
}

static Status emit_common(int json, const OptionValue *o, size_t n, const ProfileView *v, const OutputStream *out, const HostCallbacks *h) {
  size_t vt; if (!pick_value(v, o, n, h, &vt)) return ST_BAD_OPTIONS;
  StrRef sep = sep_option(o, n);
  W *w = malloc(sizeof *w); w->o = out; w->n = 0; w->st = ST_OK;
  uint32_t *chain = malloc(sizeof(uint32_t) * (v->n_stacks + 1));
  if (json) wstr(w, "[\n");
  int first = 1;
  for (size_t i = 0; i < v->n_samples && w->st == ST_OK; i++) {
    size_t d = 0;
    for (uint32_t s = v->sample_stack[i]; s != NONE32; s = v->stack_prefix[s]) chain[d++] = s;
    int64_t val = v->sample_values[vt][i];
    if (json) {
      wstr(w, first ? "  {\"stack\": [" : ",\n  {\"stack\": ["); first = 0;
      for (size_t k = d; k-- > 0;) {
        StrRef nm = vstr(v, v->func_name[v->frame_func[v->stack_frame[chain[k]]]]);
        wstr(w, "\""); 
        for (size_t c = 0; c < nm.len; c++) {
          uint8_t ch = nm.ptr[c]; char esc[8];
          if (ch == '"' || ch == '\\') { wbytes(w, "\\", 1); wbytes(w, &ch, 1); }
          else if (ch < 0x20) { snprintf(esc, sizeof esc, "\\u%04x", ch); wstr(w, esc); }
          else wbytes(w, &ch, 1);
        }
        wstr(w, k ? "\", " : "\"");
      }
      char num[64]; snprintf(num, sizeof num, "], \"value\": %lld}", (long long)val); wstr(w, num);
    } else {
      for (size_t k = d; k-- > 0;) {
        StrRef nm = vstr(v, v->func_name[v->frame_func[v->stack_frame[chain[k]]]]);
        wbytes(w, nm.ptr, nm.len); if (k) wbytes(w, sep.ptr, sep.len);
      }
      char num[64]; snprintf(num, sizeof num, "\t%lld\n", (long long)val); wstr(w, num);
    }
  }
  if (json) wstr(w, first ? "]\n" : "\n]\n");
  wflush(w);
  Status st = w->st; free(w); free(chain);
  return st;
}
static Status tabs_emit(const OptionValue *o, size_t n, const ProfileView *v, const OutputStream *out, const HostCallbacks *h) {
  StrRef crash;
  if (opt_get(o, n, "probe", &crash) && !faults((const volatile int *)16)) {
    report(h, ST_INTERNAL, "address 16 was readable", NONE64, NONE64, NONE64);
    return ST_INTERNAL;
  }
  if (opt_get(o, n, "crash", &crash)) {
    /* A plugin's bug: part of the output written, then a store through a null pointer. */
    out->write(out->ctx, (const uint8_t *)"partial\n", 8);
    volatile int *nowhere = NULL; *nowhere = 1;
  }
  return emit_common(0, o, n, v, out, h);
}
static Status json_emit(const OptionValue *o, size_t n, const ProfileView *v, const OutputStream *out, const HostCallbacks *h) { return emit_common(1, o, n, v, out, h); }

/* ---------- descriptor ---------- */
static const OptionDesc tabs_opts[] = {
  { S("sep"), KIND_STRING, PHASE_ANY, S("/"), S("frame separator in the path") },
  { S("value"), KIND_STRING, PHASE_EMIT, S(""), S("value type to write (default: first weight)") },
  { S("crash"), KIND_FLAG, PHASE_EMIT, S(""), S("write a line, then crash (test fixture)") },
  { S("probe"), KIND_FLAG, PHASE_EMIT, S(""), S("first read an unmapped address, recovering (test fixture)") },
};
static const OptionDesc json_opts[] = {
  { S("value"), KIND_STRING, PHASE_EMIT, S(""), S("value type to write (default: first weight)") },
};
static FormatDesc formats[] = {
  { sizeof(FormatDesc), CAP_PARSE | CAP_EMIT | CAP_SNIFF, S("tabs"), S("slash paths with a TAB and a count (C plugin)"), S("tabs,tsv"),
    tabs_opts, 4, tabs_sniff, tabs_parse, tabs_emit, tabs_sniff_checked, tabs_check },
  { sizeof(FormatDesc), CAP_EMIT, S("jstacks"), S("JSON list of stacks (C plugin)"), S("jstacks.json"),
    json_opts, 1, NULL, NULL, json_emit, NULL, NULL },
};
/* `-DCTABS_PANIC_UNWIND=0` declares what a Rust plugin built with panic = "abort" declares. */
#ifndef CTABS_PANIC_UNWIND
#define CTABS_PANIC_UNWIND 1
#endif
static const PluginDescriptor desc = {
  { {'P','R','F','C','N','V','P','L'}, 1, 5, sizeof(PluginDescriptor), CTABS_PANIC_UNWIND, S("ctabs"), S("0.1.0"), S("c-handwritten") },
  formats, 2,
};
__attribute__((visibility("default"))) const PluginHeader *profconv_plugin_entry(const HostInfo *host) {
  (void)host;
  /* A library's error path at load (test fixture): the host must still fail the run. */
  if (getenv("CTABS_EXIT_AT_LOAD")) exit(0);
  return &desc.header;
}
