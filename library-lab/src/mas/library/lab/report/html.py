"""``report.html``: the result, the table, the claims, the plots and the detail behind them.

One self-contained file (plots inlined as SVG, no script, no network): the result first
(a sentence per metric and the Pareto plot), the table with which way is better and who
scored it per row, the claims with their differences, what each flavour changes and the
plugins it ran on, the per-session plots, links to every session folder (and its
timeline), and the CSV / JSON exports of the table.
"""

from __future__ import annotations

from html import escape
from typing import Any

from mas.library.lab.report.table import (
    better,
    cell,
    methods_note,
    row_label,
    row_order,
    scored_by,
)
from mas.library.lab.steps.degraded import degraded_rows

_STYLE = """
body{font-family:sans-serif;margin:2em auto;padding:0 2em;max-width:1400px;color:#222}
figure svg{width:100%;height:auto;display:block}ul.findings li{margin:.4em 0}
li.separated{color:#1a7f37}li.open{color:#333}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 10px}
td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f4f4f4}
.claim-yes{color:#1a7f37}.claim-no{color:#b42318}.note{color:#555;font-size:90%}
tr.degraded td{color:#b42318}figure{margin:1.5em 0}figcaption{color:#555;font-size:90%}
td.params{font-size:85%;font-family:monospace}h3{font-size:100%;font-weight:normal}
nav a{margin-right:1em}
"""


def _figure(name: str, svg: str) -> str:
    return (f"<figure id='{escape(name)}'>{svg}<figcaption><a href='plots/{escape(name)}'>"
            f"plots/{escape(name)}</a></figcaption></figure>")


def render_html(info: dict[str, Any], results: dict[str, Any], plots: dict[str, str],
                notes: list[str], *, cost_label: str = "cost USD", claims: str = "",
                flavours_html: str = "", sessions_html: str = "",
                exports: tuple[str, ...] = (), result: str = "") -> str:
    """The whole page; plots are inlined SVG (each is also saved under plots/).

    :param cost_label: the cost row's label (says how cost was priced).
    :param claims: HTML of the claims section (:func:`sections.claims_section`); likewise
        ``flavours_html``, ``sessions_html`` and ``result`` (:func:`result.result_section`,
        the page's first section, holding ``pareto.svg``).
    :param exports: file names of the table's exports, linked under the table.
    """
    flavours = results["flavours"]
    head = "".join(f"<th>{escape(f)}</th>" for f in flavours)
    rows = []
    for metric in row_order(results):
        cells = "".join(f'<td class="n">{escape(cell(results["metrics"][f].get(metric)))}</td>'
                        for f in flavours)
        label = cost_label if metric == "Cost" else row_label(metric)
        way = escape(better(metric, results))
        by = escape(scored_by(metric, results))
        rows.append(f"<tr><td>{escape(label)}</td><td>{way}</td><td>{by}</td>{cells}</tr>")
    sessions = results.get("sessions", {})
    counts = "".join(f'<td class="n">{sessions.get(f, {}).get("total", 0)} '
                     f'({sessions.get(f, {}).get("failed", 0)})</td>' for f in flavours)
    rows.append(f"<tr><td>sessions (failed)</td><td></td><td></td>{counts}</tr>")
    for label, values in degraded_rows(results):
        cells = "".join(f'<td class="n">{escape(v)}</td>' for v in values)
        rows.append(f'<tr class="degraded"><td>{escape(label)}</td><td></td><td></td>{cells}</tr>')
    headline = [name for name in plots if name.startswith("score_vs_cost")]
    shown = {"pareto.svg", *headline}
    others = "".join(_figure(name, svg) for name, svg in plots.items() if name not in shown)
    title = f"{info.get('experiment', 'experiment')} — lab report"
    links = " · ".join(f"<a href='{escape(name)}'>{escape(name)}</a>" for name in exports)
    return (
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{escape(title)}"
        f"</title><style>{_STYLE}</style></head><body><h1>{escape(title)}</h1>"
        "<nav><a href='#result'>result</a><a href='#results'>table</a><a href='#claims'>claims</a>"
        "<a href='#flavours'>flavours</a><a href='#plots'>plots</a>"
        "<a href='#sessions'>sessions</a></nav>"
        f"<p class='note'>run created {escape(str(info.get('created', '?')))}; "
        f"flavours: {escape(', '.join(flavours))}; values are per-session means. "
        f"{escape(methods_note(results))}</p>{result}"
        "<h2>Table</h2><table id='results'><tr><th>metric</th><th>better</th>"
        f"<th>scored by</th>{head}</tr>"
        f"{''.join(rows)}"
        "</table>"
        + (f"<p class='note'>The table as data: {links}.</p>" if links else "")
        + "".join(f"<p class='note'>{escape(n)}</p>" for n in notes)
        + "".join(_figure(name, plots[name]) for name in headline)
        + claims + flavours_html + f"<h2 id='plots'>Plots</h2>{others}" + sessions_html
        + "</body></html>\n"
    )
