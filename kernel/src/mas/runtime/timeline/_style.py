"""The timeline page's style sheet, inlined into every page (no fonts or files fetched)."""

from __future__ import annotations

STYLE = r"""
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;
  color:#1f2937;background:#f8fafc}
header{padding:14px 24px 6px}
h1{font-size:20px;margin:0 0 2px}
h2{font-size:15px;margin:18px 0 6px}
.meta{color:#4b5563;margin:0}
main{display:grid;grid-template-columns:minmax(0,1fr) 290px;gap:16px;padding:6px 24px 24px}
#plots{position:relative;background:#fff;border:1px solid #e5e7eb;border-radius:6px;
  padding:8px 8px 4px;align-self:start}
canvas{display:block;width:100%}
.caption{color:#4b5563;font-size:12px;margin:2px 0 8px 78px}
#share-legend span{margin-right:12px}
#cursor{position:absolute;top:8px;bottom:4px;width:1px;background:#111827;opacity:.55;
  pointer-events:none;display:none}
#legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px;margin:2px 0 6px 78px}
#legend span::before,#share-legend span::before{content:"";display:inline-block;
  width:11px;height:11px;margin-right:5px;vertical-align:-1px;background:var(--c);border-radius:2px}
#legend span.line::before{height:0;border-top:2px var(--s) var(--c);border-radius:0;
  vertical-align:3px;background:none}
aside{background:#fff;border:1px solid #e5e7eb;border-radius:6px;padding:10px 12px;
  align-self:start;position:sticky;top:8px;font-size:13px;max-height:calc(100vh - 16px);
  overflow:auto}
aside h3{font-size:14px;margin:0 0 6px}
dl{display:grid;grid-template-columns:auto auto;gap:1px 10px;margin:0 0 8px}
dt{color:#4b5563}dd{margin:0;text-align:right;font-variant-numeric:tabular-nums}
#summary{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:8px;
  padding:0 24px 8px}
#summary div.wide{grid-column:span 2}
#summary div.wide b{font-size:14px}
#summary div{background:#fff;border:1px solid #e5e7eb;border-radius:6px;padding:6px 10px}
#summary b{display:block;font-size:17px;font-variant-numeric:tabular-nums}
#summary small{color:#4b5563}
table{border-collapse:collapse;background:#fff;font-size:12px;
  font-variant-numeric:tabular-nums}
th,td{border:1px solid #e5e7eb;padding:3px 7px;text-align:right}
th{background:#f1f5f9;font-weight:600}
.tables{grid-column:1/3}
.note{color:#4b5563;font-size:12px}
"""
