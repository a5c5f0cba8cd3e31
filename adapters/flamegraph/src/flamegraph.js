"use strict";
// profconv flame graph viewer: hover details, click to zoom, regular-expression search.
// Everything the script needs is in the SVG: the configuration in fg:* attributes of the root
// element, each frame's exact left edge and width (in value units) in fg:x and fg:w of its
// rect, its name and value in its <title>. No network access, no external files.
//
// Keys: Ctrl-F, F3 or / to search; Ctrl-I to toggle case-insensitive search; Escape to reset
// the zoom, then the search. Zoom and search are kept in the URL (?x=&y=&s=&i=), so a link
// reopens the same view.

var fg_svg, fg_frames, fg_details, fg_matched, fg_unzoom, fg_search, fg_ic;
var fg_nodes = []; // one entry per frame, in document order
var fg_total = 1, fg_xpad = 10, fg_plotw = 1180, fg_charw = 7, fg_inverted = false;
var fg_nametype = "", fg_searchcolor = "rgb(230,0,230)";
var fg_zoomed = null; // the frame zoomed into, or null
var fg_hovered = null; // the frame under the mouse, or null
var fg_base = 0; // the level of the "all" frame under everything
var fg_term = null; // the current search, or null
var fg_ignorecase = false;

// The SVG's own elements, found under its root: inlined into an HTML page the document is the
// page, whose root is <html> (not the SVG, which has the settings) and whose own elements may
// have these ids (a search box id="search").
function fg_part(id) { return fg_svg.querySelector("#" + id); }

function fg_init(evt) {
  // The <svg> whose onload calls this: the document's root when the file is opened (or shown
  // by <object>/<embed>), the element itself when it is inlined into an HTML page.
  var root = evt && evt.target;
  fg_svg = root && root.localName === "svg" ? root : document.documentElement;
  var conf = function (name) { return fg_svg.getAttribute("fg:" + name); };
  var fontsize = +conf("fontsize") || 12;
  fg_charw = fontsize * (+conf("fontwidth") || 0.6);
  fg_xpad = +conf("xpad") || 0;
  fg_inverted = conf("inverted") === "1";
  fg_nametype = conf("nametype") || "";
  fg_searchcolor = conf("searchcolor") || fg_searchcolor;
  fg_plotw = +fg_svg.getAttribute("width") - 2 * fg_xpad;
  fg_frames = fg_part("frames");
  fg_total = +fg_frames.getAttribute("fg:total") || 1;
  fg_details = fg_part("details");
  fg_matched = fg_part("matched");
  fg_unzoom = fg_part("unzoom");
  fg_search = fg_part("search");
  fg_ic = fg_part("ignorecase");

  // fg:x and fg:w are exact integers that may pass 2^53, where the sum of two doubles is
  // rounded and a frame ending where its parent ends can seem to stick out of it: which frames
  // a zoom shows and which matches count are decided on BigInts (exact), when the browser has
  // them and every position is an integer.
  var groups = fg_frames.children;
  var exact = typeof BigInt === "function";
  var integer = /^-?[0-9]+$/;
  for (var i = 0; exact && i < groups.length; i++) {
    var r = groups[i].querySelector("rect");
    if (r) exact = integer.test(r.getAttribute("fg:x")) && integer.test(r.getAttribute("fg:w"));
  }
  var num = exact ? BigInt : Number;
  for (var i = 0; i < groups.length; i++) {
    var g = groups[i];
    var title = g.querySelector("title"), rect = g.querySelector("rect"), text = g.querySelector("text");
    if (!title || !rect || !text) continue;
    var t = title.textContent, cut = t.lastIndexOf(" (");
    var y = +rect.getAttribute("y");
    var lo = num(rect.getAttribute("fg:x"));
    g.fg_index = fg_nodes.length;
    fg_nodes.push({
      g: g, rect: rect, text: text, title: t,
      name: cut >= 0 ? t.substring(0, cut) : t,
      x: +rect.getAttribute("fg:x"), w: +rect.getAttribute("fg:w"),
      lo: lo, hi: lo + num(rect.getAttribute("fg:w")), // exact left and right edges
      level: fg_inverted ? y : -y, // larger is deeper
      fill: rect.getAttribute("fill"), match: false
    });
  }

  fg_base = Infinity;
  for (var i = 0; i < fg_nodes.length; i++) fg_base = Math.min(fg_base, fg_nodes[i].level);
  fg_measure_font();
  fg_fit_title(fontsize, +conf("fontwidth") || 0.6);

  fg_frames.addEventListener("mouseover", function (e) {
    var n = fg_node_of(e.target);
    if (n) { fg_hovered = n; fg_show_details(); }
  });
  fg_frames.addEventListener("mouseout", function (e) {
    if (fg_node_of(e.target)) { fg_hovered = null; fg_show_details(); }
  });
  fg_frames.addEventListener("click", function (e) {
    var n = fg_node_of(e.target);
    if (!n) return;
    e.preventDefault();
    // The frame under everything ("all") zooms back out; a root as wide as it zooms in.
    if (n.level === fg_base) fg_reset_zoom(); else fg_zoom(n);
  });
  fg_unzoom.addEventListener("click", function () { fg_reset_zoom(); });
  fg_search.addEventListener("click", function () {
    if (fg_term !== null) fg_reset_search(); else fg_search_prompt();
  });
  fg_ic.addEventListener("click", function () { fg_toggle_ignorecase(); });
  window.addEventListener("keydown", fg_keydown, false);
  fg_search.classList.remove("hide");
  fg_ic.classList.remove("hide");
  fg_restore();
}

function fg_keydown(e) {
  // Keys typed into a field of the page the SVG is inlined into are that field's ("/" in a
  // search box).
  var t = e.target;
  if (t && (t.isContentEditable || /^(input|textarea|select)$/i.test(t.localName || ""))) return;
  var ctrl = e.ctrlKey || e.metaKey;
  if ((ctrl && (e.key === "f" || e.key === "F")) || e.key === "F3" ||
      (e.key === "/" && !ctrl && !e.altKey)) {
    e.preventDefault();
    fg_search_prompt();
  } else if (ctrl && !e.shiftKey && !e.altKey && (e.key === "i" || e.key === "I")) {
    // Not Ctrl-Shift-I: the browser's developer tools, which a cancelled key keeps closed.
    e.preventDefault();
    fg_toggle_ignorecase();
  } else if (e.key === "Escape") {
    if (fg_zoomed) fg_reset_zoom(); else if (fg_term !== null) fg_reset_search();
  }
}

// The labels were cut for fontsize × fontwidth pixels a character. Where the browser's font is
// wider (DejaVu Sans Mono and Menlo are 0.602 em, for a fontwidth of 0.6), a long label would
// reach past its frame's end: the width is measured, and the labels cut again if it is larger.
function fg_measure_font() {
  var probe = document.createElementNS(fg_svg.namespaceURI, "text");
  var sample = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:;.<>()";
  probe.textContent = sample;
  fg_frames.appendChild(probe); // styled as the frames' labels
  var w = 0;
  try { w = probe.getComputedTextLength() / sample.length; } catch (e) { w = 0; }
  fg_frames.removeChild(probe);
  if (!(w > fg_charw)) return;
  fg_charw = w;
  // "Search" ends two characters before "ic", which ends at the right edge.
  var ic_end = +fg_ic.getAttribute("x"), search_end = +fg_search.getAttribute("x");
  if (ic_end - 4 * w < search_end) fg_search.setAttribute("x", fg_px(ic_end - 4 * w));
  for (var i = 0; i < fg_nodes.length; i++) {
    var n = fg_nodes[i], label = fg_fit(n.name, +n.rect.getAttribute("width"));
    if (n.text.textContent !== label) n.text.textContent = label;
  }
}

// The title shares its line with "Reset Zoom" on the left and "Reset Search" and "ic" on the
// right (17 characters with the gaps): centred, it keeps clear of the wider side, unless the
// image is too narrow to leave it a word (then it keeps the whole line it has in the file, where
// it is cut to the image's width for the picture without script).
function fg_fit_title(fontsize, fontwidth) {
  var title = fg_part("title");
  if (!title) return;
  var charw = fontsize * Math.max(fontwidth, 0.6);
  var titlew = charw / fontsize * (fontsize + 5); // the title's font is 5 px larger (svg.rs)
  var between = fg_plotw - 2 * 17 * charw;
  if (!(between >= 8 * titlew)) return;
  var label = fg_cut(title.textContent, Math.floor(between / titlew));
  if (title.textContent !== label) title.textContent = label;
}

// The frame entry of an element inside a frame's <g>, or null.
function fg_node_of(el) {
  while (el && el.parentNode !== fg_frames) el = el.parentNode;
  return el && el.fg_index !== undefined ? fg_nodes[el.fg_index] : null;
}

function fg_set_text(el, s) { el.textContent = s; }

function fg_percent(part, whole) {
  return (whole > 0 ? 100 * part / whole : 0).toFixed(2) + "%";
}

// "name (value unit, P% of the total)" plus, when zoomed, the share of the zoomed frame (not
// for the dimmed callers below it, which are wider than it).
function fg_describe(n) {
  var t = n.title;
  if (fg_zoomed && !n.g.classList.contains("parent") && t.charAt(t.length - 1) === ")") {
    t = t.substring(0, t.length - 1) + "; " + fg_percent(n.w, fg_zoomed.w) + " of the zoomed frame)";
  }
  return t;
}

// The details line: the hovered frame's description, its name cut to leave room for the
// numbers and for what the right end shows ("Matched: 100.00%", "Bad regular expression");
// a no-break space keeps the text node.
function fg_show_details() {
  var n = fg_hovered;
  if (!n || n.g.classList.contains("hide")) { fg_set_text(fg_details, "\u00a0"); return; }
  var t = fg_describe(n), rest = t.substring(n.name.length), head = fg_nametype + " ";
  // The line's room: the plot less the right end's (22 cells and a gap).
  var line = Math.floor(fg_plotw / fg_charw) - 24;
  // An image too narrow for the prefix and a few cells of the name (under about 300 px):
  // what fits of the line, or nothing, rather than a line over Matched and off the image.
  if (line < fg_width(head) + 4) {
    var all = head + n.name.replace(/[\u202a-\u202e\u2066-\u2069]/g, "\ufffd") + rest;
    fg_set_text(fg_details, line >= 2 ? fg_cut(all, line) : "\u00a0");
    return;
  }
  var name = fg_cut(n.name, Math.max(line - fg_width(head) - fg_width(rest), 3));
  // Numbers too long for the line even with the name cut short (a differential graph's of
  // large values) are cut at the end: the line never runs into Matched or off the image.
  var room = line - fg_width(head) - fg_width(name);
  if (fg_width(rest) > room) rest = fg_cut(rest, Math.max(room, 1));
  // The name isolated (U+2068 … U+2069): right-to-left characters in it, an override, must not
  // reorder the numbers after it. Its own embedding and isolate controls are shown as U+FFFD:
  // one of them could close the isolate early or leave one open past it. WebKit (Safari) draws
  // SVG text without isolates: a left-to-right mark after it keeps the numbers of a Hebrew or
  // Arabic name in their place there ("(31 samples" was drawn "31) … samples").
  name = name.replace(/[\u202a-\u202e\u2066-\u2069]/g, "\ufffd");
  fg_set_text(fg_details, head + "\u2068" + name + "\u2069\u200e" + rest);
}

// Code points of no cell (they join the character before: combining marks, joiners, variation
// selectors, skin tones) and of two cells (East Asian wide characters, emoji): sorted,
// inclusive, the Rust side's ZERO_CELLS and WIDE_CELLS, so static and re-fitted labels agree.
var fg_zero_cells = [
  [0x300, 0x36f], [0x1ab0, 0x1aff], [0x1dc0, 0x1dff], [0x200b, 0x200f], [0x2060, 0x2064],
  [0x20d0, 0x20ff], [0xfe00, 0xfe0f], [0xfe20, 0xfe2f], [0xfeff, 0xfeff], [0x1f3fb, 0x1f3ff],
  [0xe0000, 0xe007f], [0xe0100, 0xe01ef]];
var fg_wide_cells = [
  [0x1100, 0x115f], [0x231a, 0x231b], [0x2329, 0x232a], [0x23e9, 0x23ec], [0x23f0, 0x23f0],
  [0x23f3, 0x23f3], [0x25fd, 0x25fe], [0x2614, 0x2615], [0x2648, 0x2653], [0x267f, 0x267f],
  [0x2693, 0x2693], [0x26a1, 0x26a1], [0x26aa, 0x26ab], [0x26bd, 0x26be], [0x26c4, 0x26c5],
  [0x26ce, 0x26ce], [0x26d4, 0x26d4], [0x26ea, 0x26ea], [0x26f2, 0x26f3], [0x26f5, 0x26f5],
  [0x26fa, 0x26fa], [0x26fd, 0x26fd], [0x2705, 0x2705], [0x270a, 0x270b], [0x2728, 0x2728],
  [0x274c, 0x274c], [0x274e, 0x274e], [0x2753, 0x2755], [0x2757, 0x2757], [0x2795, 0x2797],
  [0x27b0, 0x27b0], [0x27bf, 0x27bf], [0x2b1b, 0x2b1c], [0x2b50, 0x2b50], [0x2b55, 0x2b55],
  [0x2e80, 0xa4cf], [0xac00, 0xd7a3], [0xf900, 0xfaff], [0xfe30, 0xfe4f], [0xff00, 0xff60],
  [0xffe0, 0xffe6], [0x1f004, 0x1f004], [0x1f0cf, 0x1f0cf], [0x1f18e, 0x1f18e],
  [0x1f191, 0x1f19a], [0x1f200, 0x1faff], [0x20000, 0x3fffd]];

// Whether `cp` is in one of the sorted inclusive `ranges` (a binary search).
function fg_in(ranges, cp) {
  var lo = 0, hi = ranges.length;
  while (lo < hi) {
    var mid = (lo + hi) >> 1;
    if (ranges[mid][1] < cp) lo = mid + 1; else hi = mid;
  }
  return lo < ranges.length && ranges[lo][0] <= cp;
}

// Character cells of a code point: 0, 2 or 1.
function fg_cells(cp) {
  if (cp < 0x300) return 1;
  if (fg_in(fg_zero_cells, cp)) return 0;
  return fg_in(fg_wide_cells, cp) ? 2 : 1;
}

function fg_width(s) {
  var total = 0;
  for (var c of s) total += fg_cells(c.codePointAt(0));
  return total;
}

// The label for a frame `px` pixels wide: the name, or its start and an ellipsis, or nothing.
function fg_fit(name, px) {
  var room = Math.floor((px - 6) / fg_charw);
  if (!(room >= 3)) return "";
  return fg_cut(name, room);
}

// `name` if it takes at most `room` cells, else its start and an ellipsis in `room` cells.
function fg_cut(name, room) {
  if (fg_width(name) <= room) return name;
  // A character's combining marks (0 cells) stay with it; a sequence of emoji joined by
  // zero-width joiners is dropped whole if cut; half a flag (an odd regional indicator at the
  // end) is dropped. As fit_label on the Rust side.
  var out = "", used = 0, indicators = 0, cluster = 0, joined = false, c;
  for (c of name) {
    var cp = c.codePointAt(0), w = fg_cells(cp);
    if (used + w > room - 1) break;
    if (w > 0 && !joined) cluster = out.length;
    out += c;
    used += w;
    joined = cp === 0x200d;
    indicators = cp >= 0x1f1e6 && cp <= 0x1f1ff ? indicators + 1 : 0;
  }
  if (joined) out = out.slice(0, cluster);
  else if (indicators % 2 === 1) out = out.slice(0, -2); // a regional indicator is 2 UTF-16 units
  return out + "\u2026";
}

function fg_px(v) { return String(Math.round(v * 100) / 100); }

// A frame placed at x, w wide: attributes set only when they change (Reset Zoom after a deep
// zoom finds most frames where they were, hidden; on 100 000 frames the setting was most of
// its time), and the label fitted to the width as drawn, rounded, as the picture's own labels
// were (fitted to the exact width, a label could lose a character after Reset Zoom).
function fg_place(n, x, w) {
  var sx = fg_px(x), sw = fg_px(w);
  if (n.rect.getAttribute("x") !== sx) {
    n.rect.setAttribute("x", sx);
    n.text.setAttribute("x", fg_px(x + 3));
  }
  if (n.rect.getAttribute("width") !== sw) n.rect.setAttribute("width", sw);
  var label = fg_fit(n.name, +sw);
  if (n.text.textContent !== label) n.text.textContent = label;
}

function fg_zoom(z) {
  fg_zoomed = z;
  var zw = z.w, zl = z.level;
  for (var i = 0; i < fg_nodes.length; i++) {
    var n = fg_nodes[i], cl = n.g.classList;
    if (n.level < zl) {
      if (n.lo <= z.lo && n.hi >= z.hi) {
        // An ancestor: drawn dimmed across the whole width.
        cl.remove("hide");
        cl.add("parent");
        fg_place(n, fg_xpad, fg_plotw);
      } else {
        cl.add("hide");
      }
    } else if (n.lo >= z.lo && n.hi <= z.hi) {
      cl.remove("hide");
      cl.remove("parent");
      // The offset from the zoomed frame's edge is taken exactly, then made a double: past
      // 2^53 the difference of two doubles is rounded, and children a few units apart drew
      // on top of each other.
      fg_place(n, fg_xpad + Number(n.lo - z.lo) / zw * fg_plotw, n.w / zw * fg_plotw);
    } else {
      cl.add("hide");
    }
  }
  fg_unzoom.classList.remove("hide");
  fg_update_matched();
  fg_show_details();
  fg_save_state();
}

function fg_reset_zoom() {
  fg_zoomed = null;
  for (var i = 0; i < fg_nodes.length; i++) {
    var n = fg_nodes[i];
    n.g.classList.remove("hide");
    n.g.classList.remove("parent");
    fg_place(n, fg_xpad + n.x / fg_total * fg_plotw, n.w / fg_total * fg_plotw);
  }
  fg_unzoom.classList.add("hide");
  fg_update_matched();
  fg_show_details();
  fg_save_state();
}

function fg_search_prompt() {
  var term = window.prompt("Search for a regular expression" +
    (fg_ignorecase ? " (ignoring case)" : "") + ":", fg_term === null ? "" : fg_term);
  if (term === null) return; // cancelled
  if (term === "") fg_reset_search(); else fg_do_search(term);
}

function fg_do_search(term) {
  var re;
  try {
    re = new RegExp(term, fg_ignorecase ? "i" : "");
  } catch (e) {
    // The previous search ends too, so that nothing highlighted belongs to another term.
    if (fg_term !== null) fg_reset_search();
    fg_set_text(fg_matched, "Bad regular expression");
    return;
  }
  fg_term = term;
  // A name is tested once however many frames it has, and only rects that change are touched.
  var tested = new Map();
  for (var i = 0; i < fg_nodes.length; i++) {
    var n = fg_nodes[i], m = tested.get(n.name);
    if (m === undefined) { m = re.test(n.name); tested.set(n.name, m); }
    if (m !== n.match) {
      n.match = m;
      n.rect.setAttribute("fill", m ? fg_searchcolor : n.fill);
    }
  }
  fg_set_text(fg_search, "Reset Search");
  fg_search.classList.add("show");
  fg_update_matched();
  fg_save_state();
}

function fg_reset_search() {
  fg_term = null;
  for (var i = 0; i < fg_nodes.length; i++) {
    var n = fg_nodes[i];
    if (!n.match) continue;
    n.match = false;
    n.rect.setAttribute("fill", n.fill);
  }
  fg_set_text(fg_search, "Search");
  fg_search.classList.remove("show");
  fg_update_matched();
  fg_save_state();
}

function fg_toggle_ignorecase() {
  fg_ignorecase = !fg_ignorecase;
  if (fg_ignorecase) fg_ic.classList.add("show"); else fg_ic.classList.remove("show");
  if (fg_term !== null) fg_do_search(fg_term); else fg_save_state();
}

// "Matched: P%": the share of the zoomed frame (or of everything) covered by matching frames,
// a match inside another match counted once.
function fg_update_matched() {
  if (fg_term === null) { fg_set_text(fg_matched, "\u00a0"); return; }
  var z = fg_zoomed, zl = z ? z.level : -Infinity;
  var hits = [];
  for (var i = 0; i < fg_nodes.length; i++) {
    var n = fg_nodes[i];
    if (n.match && n.level >= zl && (!z || (n.lo >= z.lo && n.hi <= z.hi))) hits.push(n);
  }
  // On the exact edges (BigInts where the positions pass 2^53): only differences of nearby
  // edges become doubles, so one-unit matches far from 0 still count.
  hits.sort(function (a, b) {
    return a.lo < b.lo ? -1 : a.lo > b.lo ? 1 : a.hi > b.hi ? -1 : a.hi < b.hi ? 1 : 0;
  });
  var covered = 0, end = null;
  for (var j = 0; j < hits.length; j++) {
    var s = hits[j].lo, e = hits[j].hi;
    if (end === null || s >= end) { covered += Number(e - s); end = e; }
    else if (e > end) { covered += Number(e - end); end = e; }
  }
  fg_set_text(fg_matched, "Matched: " + fg_percent(covered, z ? z.w : fg_total));
}

function fg_save_state() {
  try {
    var params = new URLSearchParams(window.location.search);
    ["x", "y", "s", "i"].forEach(function (k) { params.delete(k); });
    if (fg_zoomed) {
      params.set("x", fg_zoomed.rect.getAttribute("fg:x")); // exact, as written
      params.set("y", fg_zoomed.rect.getAttribute("y"));
    }
    if (fg_term !== null) params.set("s", fg_term);
    if (fg_ignorecase) params.set("i", "1");
    var q = params.toString();
    window.history.replaceState(null, "", window.location.pathname + (q ? "?" + q : "") + window.location.hash);
  } catch (e) {
    // Some viewers (file:// in a few browsers, embedded SVGs) refuse; the view still works.
  }
}

function fg_restore() {
  var params;
  try { params = new URLSearchParams(window.location.search); } catch (e) { return; }
  if (params.get("i") === "1") {
    fg_ignorecase = true;
    fg_ic.classList.add("show");
  }
  if (params.has("x")) {
    var xs = params.get("x"), x = +xs, y = params.get("y"), found = null;
    for (var i = 0; i < fg_nodes.length && !found; i++) {
      var n = fg_nodes[i];
      if (n.rect.getAttribute("y") === y && n.rect.getAttribute("fg:x") === xs) found = n;
    }
    // A link written before positions were kept exactly: the nearest double.
    for (var j = 0; j < fg_nodes.length && !found; j++) {
      if (fg_nodes[j].x === x && fg_nodes[j].rect.getAttribute("y") === y) found = fg_nodes[j];
    }
    if (found) fg_zoom(found);
  }
  if (params.has("s") && params.get("s") !== "") fg_do_search(params.get("s"));
}
