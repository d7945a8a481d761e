"""The timeline page's script, inlined into every page (no network).

The script draws on ``<canvas>``: one column per pixel at most, so a session of 10,000
requests costs the same to draw as one of a thousand pixels' worth. Where several requests
share a column, the column shows the fullest of them (the peak is what a budget is about)
and hovering still picks the exact request under the pointer.
"""

from __future__ import annotations

SCRIPT = r"""
(function () {
"use strict";
var D = JSON.parse(document.getElementById("timeline-data").textContent);
var N = D.requests, L = 78, R = 8;
var PART = {system: "#64748b", tools: "#a78bfa", skills: "#f59e0b", working_memory: "#f472b6",
  summary: "#10b981", pruned: "#fbbf24", history: "#3b82f6", current_input: "#1e3a8a"};
var SPARE = ["#0ea5e9", "#84cc16", "#e11d48", "#14b8a6", "#c2410c"];
var STATE = {sent: "#3b82f6", summarized: "#10b981", dropped: "#9ca3af", cut: "#dc2626"};
var STATES = ["sent", "summarized", "dropped", "cut"];
var ROWS = [["compaction", "compaction"], ["recall", "recall"], ["pruning", "pruning"],
  ["degradation", "degradation"]];
var LIMITS = [["window", "#111827", "solid", []], ["hard", "#dc2626", "dashed", [6, 4]],
  ["trigger", "#d97706", "dotted", [2, 3]]];
var pinned = -1;

function partColor(k) { return PART[D.keys[k]] || SPARE[k % SPARE.length]; }
function num(v) { return v === null || v === undefined ? 0 : v; }
function fmt(v) {
  if (v === null || v === undefined) { return "\u2013"; }
  return typeof v === "number" ? v.toLocaleString("en-US") : String(v);
}
function label(key) { return key.replace(/_/g, " ").replace(/\./g, ": "); }
function el(tag, text, cls) {
  var node = document.createElement(tag);
  if (text !== undefined) { node.textContent = text; }
  if (cls) { node.className = cls; }
  return node;
}

var total = new Array(N), peak = 0, i, k;
for (i = 0; i < N; i++) {
  var sum = 0;
  for (k = 0; k < D.keys.length; k++) { sum += num(D.parts[k][i]); }
  total[i] = D.est[i] === null ? sum : D.est[i];
  peak = Math.max(peak, total[i], num(D.window[i]), num(D.hard[i]), num(D.trigger[i]));
}
var yMax = niceMax(peak * 1.04 || 1);

var marks = {}, byRequest = {};
ROWS.forEach(function (row) {
  var table = D.markers[row[0]];
  marks[row[0]] = table ? table.rows.map(function (r) {
    var o = {at: r[0], row: row[0]};
    table.cols.forEach(function (c, j) { if (r[j + 1] !== null) { o[c] = r[j + 1]; } });
    (byRequest[o.at] = byRequest[o.at] || []).push(o);
    return o;
  }) : [];
});

function niceMax(v) {
  var p = Math.pow(10, Math.floor(Math.log10(v))), m = v / p;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 2.5 ? 2.5 : m <= 5 ? 5 : 10) * p;
}

function canvas(id, height) {
  var c = document.getElementById(id), w = c.parentNode.clientWidth - 16;
  var dpr = window.devicePixelRatio || 1;
  c.width = Math.round(w * dpr); c.height = Math.round(height * dpr);
  c.style.height = height + "px";
  var ctx = c.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, height);
  ctx.font = "11px system-ui, sans-serif";
  return {ctx: ctx, w: w, h: height, pw: w - L - R};
}

function columns(pw) {
  var cols = Math.max(1, Math.min(N, Math.floor(pw))), reps = new Array(cols), c;
  for (c = 0; c < cols; c++) {
    var a = Math.floor(c * N / cols), b = Math.max(a + 1, Math.floor((c + 1) * N / cols));
    var best = a;
    for (var j = a + 1; j < b; j++) { if (total[j] > total[best]) { best = j; } }
    reps[c] = best;
  }
  return reps;
}

function drawBars() {
  var g = canvas("bars", 300), ctx = g.ctx, top = 6, ph = g.h - top - 18;
  var reps = columns(g.pw), cw = g.pw / reps.length, gap = cw > 3 ? 1 : 0;
  function y(v) { return top + ph - v / yMax * ph; }
  ctx.fillStyle = "#4b5563"; ctx.strokeStyle = "#e5e7eb"; ctx.textAlign = "right";
  for (var t = 0; t <= 4; t++) {
    var v = yMax * t / 4, yy = Math.round(y(v)) + 0.5;
    ctx.beginPath(); ctx.moveTo(L, yy); ctx.lineTo(L + g.pw, yy); ctx.stroke();
    ctx.fillText(v >= 1000 ? (v / 1000) + "k" : String(v), L - 6, yy + 4);
  }
  ctx.save(); ctx.translate(12, top + ph / 2); ctx.rotate(-Math.PI / 2);
  ctx.textAlign = "center"; ctx.fillText("tokens per request", 0, 0); ctx.restore();
  reps.forEach(function (r, c) {
    var x = L + c * cw, base = 0;
    for (var k = 0; k < D.keys.length; k++) {
      var part = num(D.parts[k][r]);
      if (part <= 0) { continue; }
      ctx.fillStyle = partColor(k);
      var y0 = y(base), y1 = y(base + part);
      ctx.fillRect(x, y1, Math.max(cw - gap, 1), y0 - y1);
      base += part;
    }
    if (D.over[r]) { ctx.fillStyle = "#dc2626"; ctx.fillRect(x, top, Math.max(cw - gap, 1), 3); }
  });
  LIMITS.forEach(function (limit) {
    var values = D[limit[0]];
    ctx.strokeStyle = limit[1]; ctx.lineWidth = 1.5; ctx.setLineDash(limit[3]);
    ctx.beginPath();
    reps.forEach(function (r, c) {
      if (values[r] === null) { return; }
      var yy = y(values[r]), x = L + c * cw;
      if (c === 0 || values[reps[c - 1]] === null) { ctx.moveTo(x, yy); }
      else { ctx.lineTo(x, yy); }
      ctx.lineTo(x + cw, yy);
    });
    ctx.stroke();
  });
  ctx.setLineDash([]); ctx.lineWidth = 1;
  ctx.fillStyle = "#4b5563"; ctx.textAlign = "center";
  var step = Math.max(1, niceMax(N / 8));
  for (var n = 0; n < N; n += step) {
    ctx.fillText(String(n + 1), L + (n + 0.5) * g.pw / N, g.h - 4);
  }
  return reps.length;
}

function drawMarks() {
  var g = canvas("marks", 86), ctx = g.ctx, rh = 20;
  ROWS.forEach(function (row, ri) {
    var yy = 10 + ri * rh;
    ctx.fillStyle = "#4b5563"; ctx.textAlign = "right";
    ctx.fillText(row[1], L - 6, yy + 4);
    ctx.strokeStyle = "#eef2f7";
    ctx.beginPath(); ctx.moveTo(L, yy + 0.5); ctx.lineTo(L + g.pw, yy + 0.5); ctx.stroke();
    marks[row[0]].forEach(function (m) {
      var x = L + (Math.min(m.at, N - 1) + 0.5) * g.pw / N;
      ctx.fillStyle = markColor(m);
      ctx.beginPath();
      if (row[0] === "compaction") {
        ctx.moveTo(x, yy - 6); ctx.lineTo(x + 5, yy + 5); ctx.lineTo(x - 5, yy + 5);
      } else if (row[0] === "recall") {
        ctx.arc(x, yy, 4, 0, 2 * Math.PI);
      } else if (row[0] === "pruning") {
        ctx.rect(x - 3.5, yy - 3.5, 7, 7);
      } else {
        ctx.moveTo(x, yy - 6); ctx.lineTo(x + 5, yy); ctx.lineTo(x, yy + 6); ctx.lineTo(x - 5, yy);
      }
      ctx.fill();
    });
  });
}

function markColor(m) {
  if (m.row === "compaction") {
    return m.failed ? "#dc2626" : m.at_boundary === 0 ? "#d97706" : "#059669";
  }
  return m.row === "recall" ? "#7c3aed" : m.row === "pruning" ? "#ca8a04" : "#dc2626";
}

function drawShares() {
  var g = canvas("shares", 84), ctx = g.ctx, top = 2, ph = g.h - top - 4;
  var reps = columns(g.pw), cw = g.pw / reps.length, gap = cw > 3 ? 1 : 0;
  ctx.fillStyle = "#4b5563"; ctx.textAlign = "right";
  ctx.fillText("100%", L - 6, top + 9); ctx.fillText("0", L - 6, top + ph);
  reps.forEach(function (r, c) {
    var all = 0, base = 0;
    STATES.forEach(function (s) { all += num(D.accounting[s].tokens[r]); });
    if (!all) { return; }
    STATES.forEach(function (s) {
      var share = num(D.accounting[s].tokens[r]) / all * ph;
      if (share <= 0) { return; }
      ctx.fillStyle = STATE[s];
      ctx.fillRect(L + c * cw, top + ph - base - share, Math.max(cw - gap, 1), share);
      base += share;
    });
  });
}

function legend() {
  var box = document.getElementById("legend");
  D.keys.forEach(function (key, k) {
    var s = el("span", label(key)); s.style.setProperty("--c", partColor(k)); box.appendChild(s);
  });
  LIMITS.forEach(function (limit) {
    var name = {window: "window", hard: "hard budget", trigger: "trigger"}[limit[0]];
    var s = el("span", name, "line");
    s.style.setProperty("--c", limit[1]); s.style.setProperty("--s", limit[2]);
    box.appendChild(s);
  });
  var shares = document.getElementById("share-legend");
  STATES.forEach(function (st) {
    var s = el("span", st); s.style.setProperty("--c", STATE[st]); shares.appendChild(s);
  });
}

function sumCol(row, col) {
  return marks[row].reduce(function (a, m) { return a + num(m[col]); }, 0);
}
function first(m, names) {
  for (var j = 0; j < names.length; j++) { if (m[names[j]] !== undefined) { return m[names[j]]; } }
  return undefined;
}

function check(m, field) { return first(m, ["identifier_check." + field, field]); }

function summary() {
  var box = document.getElementById("summary"), last = N - 1, comp = marks.compaction;
  function card(title, value, note, wide) {
    var d = el("div", undefined, wide ? "wide" : "");
    d.appendChild(el("small", title)); d.appendChild(el("b", value));
    if (note) { d.appendChild(el("small", note)); }
    box.appendChild(d);
  }
  var fullest = 0;
  for (var j = 0; j < N; j++) { if (total[j] > total[fullest]) { fullest = j; } }
  card("model requests", fmt(N), fmt(D.turns) + " turns");
  if (N) {
    card("fullest request", fmt(total[fullest]) + " tokens",
      "request " + (fullest + 1) + (D.window[fullest] ? ", " +
      Math.round(100 * total[fullest] / D.window[fullest]) + "% of the window" : ""));
  }
  var inside = comp.filter(function (m) { return m.at_boundary === 0; }).length;
  var failed = comp.filter(function (m) { return m.failed; }).length;
  card("compactions", fmt(comp.length), (comp.length - inside - failed) + " at a turn boundary, " +
    inside + " inside a turn" + (failed ? ", " + failed + " failed" : ""));
  card("summarizer calls", fmt(sumCol("compaction", "llm_calls")));
  var ids = ["found", "repaired", "appended", "missing"].map(function (f) {
    return comp.reduce(function (a, m) { return a + num(check(m, f)); }, 0);
  });
  card("identifiers", ids[0] + " found", ids[1] + " repaired, " + ids[2] + " appended, " +
    ids[3] + " missing");
  card("recalls", fmt(marks.recall.length), sumCol("recall", "found") + " found, " +
    fmt(sumCol("recall", "tokens")) + " tokens");
  card("pruning passes", fmt(marks.pruning.length));
  if (D.archive) {
    card("archive", fmt(D.archive.messages) + " messages", "kept for recall, " +
      fmt(D.archive.evicted) + " evicted");
  }
  if (D.skipped_lines) {
    card("unreadable event lines", fmt(D.skipped_lines), "skipped: not one JSON event each");
  }
  var kinds = {};
  marks.degradation.forEach(function (m) {
    var kind = m.kind || "other";
    kinds[kind] = (kinds[kind] || 0) + num(m.count);
  });
  var names = Object.keys(kinds);
  card("degradation", names.length ? names.map(function (n) {
    return n + " " + kinds[n];
  }).join(", ") : "none", undefined, names.length > 1);
  if (N) {
    card("history, last request", STATES.map(function (s) {
      return s + " " + fmt(D.accounting[s].messages[last]);
    }).join(" \u00b7 "), "messages (tokens: " + STATES.map(function (s) {
      return fmt(D.accounting[s].tokens[last]);
    }).join(" / ") + ")", true);
  }
}

function compactionTable() {
  var table = document.getElementById("compactions"), comp = marks.compaction;
  if (!comp.length) {
    table.parentNode.appendChild(el("p", "No compaction in this session.", "note"));
    return;
  }
  var head = ["#", "before request", "turn", "where", "summarizer calls", "folded messages",
    "tokens after", "identifiers found", "repaired", "appended", "missing"];
  var tr = el("tr");
  head.forEach(function (h) { tr.appendChild(el("th", h)); });
  table.appendChild(tr);
  comp.slice(0, 500).forEach(function (m, j) {
    var at = Math.min(m.at, N - 1), row = el("tr");
    [j + 1, m.at + 1, N ? D.turn[at] : null,
      m.failed ? "failed" : m.at_boundary === 0 ? "inside a turn" : "turn boundary",
      m.llm_calls, m.folded_messages, m.tokens_after,
      check(m, "found"), check(m, "repaired"), check(m, "appended"), check(m, "missing")
    ].forEach(function (v) { row.appendChild(el("td", fmt(v))); });
    table.appendChild(row);
  });
  if (comp.length > 500) {
    table.parentNode.appendChild(el("p", "First 500 of " + comp.length + ".", "note"));
  }
}

function detail(r) {
  var box = document.getElementById("detail");
  box.textContent = "";
  if (r < 0 || r >= N) {
    box.appendChild(el("p", "Hover over a request to see its numbers; click to keep them.",
      "note"));
    return;
  }
  box.appendChild(el("h3", "Request " + (r + 1) + " of " + N + " \u00b7 turn " + D.turn[r] +
    (pinned === r ? " (kept)" : "")));
  var dl = el("dl");
  function add(name, value) {
    dl.appendChild(el("dt", name)); dl.appendChild(el("dd", fmt(value)));
  }
  for (var k = D.keys.length - 1; k >= 0; k--) { add(label(D.keys[k]), D.parts[k][r]); }
  add("estimated total", D.est[r]);
  add("window", D.window[r]); add("hard budget", D.hard[r]); add("trigger", D.trigger[r]);
  if (D.prompt[r] !== null) {
    add("provider prompt tokens", D.prompt[r]); add("cached tokens", D.cached[r]);
  }
  if (D.over[r]) { add("over budget", "yes"); }
  box.appendChild(dl);
  box.appendChild(el("h3", "Committed history"));
  var acc = el("dl");
  STATES.forEach(function (s) {
    acc.appendChild(el("dt", s));
    acc.appendChild(el("dd", fmt(D.accounting[s].messages[r]) + " msgs, " +
      fmt(D.accounting[s].tokens[r]) + " tok"));
  });
  box.appendChild(acc);
  (byRequest[r] || []).concat(r === N - 1 ? byRequest[N] || [] : []).forEach(function (m) {
    box.appendChild(el("h3", m.row +
      (m.at === N ? " (after the last request)" : " (before this request)")));
    var md = el("dl");
    Object.keys(m).forEach(function (key) {
      if (key === "at" || key === "row") { return; }
      md.appendChild(el("dt", label(key))); md.appendChild(el("dd", fmt(m[key])));
    });
    box.appendChild(md);
  });
}

function pointer(ev) {
  var c = document.getElementById("bars"), rect = c.getBoundingClientRect();
  var frac = (ev.clientX - rect.left - L) / (rect.width - L - R);
  return frac < 0 || frac >= 1 ? -1 : Math.floor(frac * N);
}
function moveCursor(r) {
  var cur = document.getElementById("cursor"), c = document.getElementById("bars");
  if (r < 0) { cur.style.display = "none"; return; }
  var pw = c.getBoundingClientRect().width - L - R;
  cur.style.left = (8 + L + (r + 0.5) * pw / N) + "px"; cur.style.display = "block";
}

function draw() {
  var t0 = performance.now();
  var cols = drawBars(); drawMarks(); drawShares();
  var root = document.documentElement;
  root.dataset.renderMs = (performance.now() - t0).toFixed(2);
  root.dataset.columns = String(cols);
  moveCursor(pinned);
}

var t0 = performance.now();
legend(); summary(); compactionTable(); detail(-1);
if (N) { draw(); } else {
  document.getElementById("plots").appendChild(
    el("p", "This run folder holds no model request yet.", "note"));
}
document.documentElement.dataset.totalMs = (performance.now() - t0).toFixed(2);
var plots = document.getElementById("plots");
plots.addEventListener("mousemove", function (ev) {
  if (pinned >= 0) { return; }
  var r = pointer(ev); moveCursor(r); if (r >= 0) { detail(r); }
});
plots.addEventListener("click", function (ev) {
  var r = pointer(ev);
  pinned = pinned === r ? -1 : r; moveCursor(r); detail(r);
});
var pending = 0;
window.addEventListener("resize", function () {
  clearTimeout(pending); pending = setTimeout(function () { if (N) { draw(); } }, 100);
});
}());
"""
