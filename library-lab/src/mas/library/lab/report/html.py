"""``report.html``: the results table, the checked claims and the plots, in one file."""

from __future__ import annotations

from html import escape
from typing import Any

from mas.library.lab.report.table import LABELS, cell, methods_note, row_order
from mas.library.lab.steps.degraded import degraded_rows

_STYLE = """
body{font-family:sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 10px}
td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f4f4f4}
.claim-yes{color:#1a7f37}.claim-no{color:#b42318}.note{color:#555;font-size:90%}
tr.degraded td{color:#b42318}figure{margin:1.5em 0}figcaption{color:#555;font-size:90%}
"""


def render_html(info: dict[str, Any], results: dict[str, Any], plots: dict[str, str],
                notes: list[str]) -> str:
    """The whole page; plots are inlined SVG (each is also saved under plots/)."""
    flavours = results["flavours"]
    head = "".join(f"<th>{escape(f)}</th>" for f in flavours)
    rows = []
    for metric in row_order(results):
        cells = "".join(f'<td class="n">{escape(cell(results["metrics"][f].get(metric)))}</td>'
                        for f in flavours)
        rows.append(f"<tr><td>{escape(LABELS.get(metric, metric))}</td>{cells}</tr>")
    sessions = results.get("sessions", {})
    counts = "".join(f'<td class="n">{sessions.get(f, {}).get("total", 0)} '
                     f'({sessions.get(f, {}).get("failed", 0)})</td>' for f in flavours)
    rows.append(f"<tr><td>sessions (failed)</td>{counts}</tr>")
    for label, values in degraded_rows(results):
        cells = "".join(f'<td class="n">{escape(v)}</td>' for v in values)
        rows.append(f'<tr class="degraded"><td>{escape(label)}</td>{cells}</tr>')
    claims = []
    for claim in results.get("claims") or []:
        css = "claim-yes" if claim.get("holds") and claim.get("reliable", True) else "claim-no"
        claims.append(f'<li class="{css}">{escape(claim["text"])}</li>')
    figures = "".join(f"<figure>{svg}<figcaption>plots/{escape(name)}</figcaption></figure>"
                      for name, svg in plots.items())
    title = f"{info.get('experiment', 'experiment')} — lab report"
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{escape(title)}</title>"
        f"<style>{_STYLE}</style></head><body><h1>{escape(title)}</h1>"
        f"<p class='note'>run created {escape(str(info.get('created', '?')))}; "
        f"flavours: {escape(', '.join(flavours))}; values are per-session means. "
        f"{escape(methods_note(results))}</p>"
        f"<table><tr><th>metric</th>{head}</tr>{''.join(rows)}</table>"
        + (f"<h2>Claims checked against this run</h2><ul>{''.join(claims)}</ul>" if claims else "")
        + "".join(f"<p class='note'>{escape(n)}</p>" for n in notes)
        + f"<h2>Plots</h2>{figures}</body></html>\n"
    )
