/* profconv plugin ABI 1.5, transcribed from docs/plugin-abi.md only */
#ifndef PROFCONV_ABI_H
#define PROFCONV_ABI_H
#include <stdint.h>
#include <stddef.h>

typedef uint32_t Status;
enum { ST_OK=0, ST_INVALID_INPUT=1, ST_UNSUPPORTED=2, ST_IO=3, ST_BAD_OPTIONS=4, ST_PANIC=5, ST_INTERNAL=6, ST_CANCELLED=7 };

typedef struct { const uint8_t *ptr; size_t len; } StrRef;               /* 16 */

typedef struct { uint32_t abi_major, abi_minor; StrRef host_version; } HostInfo; /* 24 */

typedef struct {
  uint8_t magic[8]; uint32_t abi_major, abi_minor, descriptor_size, panic_unwind;
  StrRef plugin_name, plugin_version, sdk_version;
} PluginHeader;                                                           /* 72 */

typedef struct { StrRef key; uint32_t kind, phases; StrRef def; StrRef help; } OptionDesc; /* 56 */
typedef struct { StrRef key, value; } OptionValue;                        /* 32 */

typedef Status (*ReadFn)(void *ctx, uint8_t *buf, size_t cap, size_t *n_read);
typedef Status (*WriteFn)(void *ctx, const uint8_t *buf, size_t len);
typedef struct { void *ctx; ReadFn read; StrRef whole; uint64_t size_hint; StrRef name; } InputStream; /* 56 */
typedef struct { void *ctx; WriteFn write; } OutputStream;                /* 16 */

/* return types of report_error/log/release_input are not stated by the doc: assumed void */
typedef void (*ReportErrorFn)(void *ctx, Status code, StrRef msg, uint64_t off, uint64_t line, uint64_t col);
typedef void (*LogFn)(void *ctx, uint32_t level, StrRef msg);
typedef void (*ReleaseInputFn)(void *ctx, uint64_t upto);
typedef struct {
  uint32_t struct_size, threads; void *ctx;
  ReportErrorFn report_error; LogFn log; ReleaseInputFn release_input;
} HostCallbacks;                                                          /* 40 */

typedef struct {
  uint32_t struct_size, flags;
  size_t n_strings; const uint64_t *str_offsets; const uint8_t *str_blob; size_t str_blob_len;
  size_t n_funcs; const uint32_t *func_name, *func_file, *func_line, *func_resource;
  size_t n_frames; const uint32_t *frame_func; const uint64_t *frame_address; const uint32_t *frame_line;
  size_t n_stacks; const uint32_t *stack_prefix, *stack_frame;
  size_t n_value_types; const uint32_t *value_type_name, *value_type_unit, *value_type_kind, *value_type_decimals;
  size_t n_samples; const uint32_t *sample_stack; const int64_t *sample_time; const int64_t *const *sample_values;
  size_t n_meta; const uint32_t *meta_key, *meta_value;
  size_t n_threads; const uint32_t *thread_name; const uint32_t *sample_thread;
} ProfileView;                                                            /* 256 */

typedef struct ProfileExport {
  ProfileView view; void (*release)(struct ProfileExport *); void *private_data;
} ProfileExport;                                                          /* 272 */

typedef uint32_t (*SniffFn)(const uint8_t *head, size_t len);
typedef Status (*SniffCheckedFn)(const uint8_t *head, size_t len, uint32_t *score);
typedef Status (*CheckOptionsFn)(const OptionValue *o, size_t n, uint32_t phase, const HostCallbacks *host);
typedef Status (*ParseFn)(const OptionValue *o, size_t n, const InputStream *in, const HostCallbacks *host, ProfileExport *out);
typedef Status (*EmitFn)(const OptionValue *o, size_t n, const ProfileView *p, const OutputStream *out, const HostCallbacks *host);

typedef struct {
  uint32_t struct_size, caps; StrRef id, description, extensions;
  const OptionDesc *options; size_t n_options;
  SniffFn sniff; ParseFn parse; EmitFn emit; SniffCheckedFn sniff_checked; CheckOptionsFn check_options;
} FormatDesc;                                                             /* 112 */

typedef struct { PluginHeader header; const FormatDesc *formats; size_t n_formats; } PluginDescriptor; /* 88 */

enum { CAP_PARSE=1, CAP_EMIT=2, CAP_SNIFF=4, CAP_STREAMING_INPUT=8, CAP_RELEASES_WHOLE_INPUT=16 };
enum { KIND_FLAG=0, KIND_STRING=1, KIND_INTEGER=2, KIND_NUMBER=3 };
enum { PHASE_ANY=0, PHASE_PARSE=1, PHASE_EMIT=2 };
#define NONE32 UINT32_MAX
#define NONE64 UINT64_MAX
#define S(lit) ((StrRef){ (const uint8_t*)(lit), sizeof(lit)-1 })

_Static_assert(sizeof(StrRef)==16,"");
_Static_assert(sizeof(HostInfo)==24,"");
_Static_assert(sizeof(PluginHeader)==72,"");
_Static_assert(sizeof(PluginDescriptor)==88,"");
_Static_assert(sizeof(FormatDesc)==112,"");
_Static_assert(offsetof(FormatDesc,check_options)==104,"");
_Static_assert(sizeof(OptionDesc)==56,"");
_Static_assert(sizeof(OptionValue)==32,"");
_Static_assert(sizeof(InputStream)==56,"");
_Static_assert(offsetof(InputStream,size_hint)==32,"");
_Static_assert(sizeof(OutputStream)==16,"");
_Static_assert(sizeof(HostCallbacks)==40,"");
_Static_assert(sizeof(ProfileView)==256,"");
_Static_assert(offsetof(ProfileView,sample_values)==200,"");
_Static_assert(offsetof(ProfileView,sample_thread)==248,"");
_Static_assert(sizeof(ProfileExport)==272,"");
#endif
