"""The results table as data: ``results_table.csv`` and ``results_table.json``.

One row per (result id, flavour): the label the table prints, which way is better, who
scored it (``scored_by``: ``mce``, ``native``, ``computed`` or ``lab``), the mean, the 95%
interval and how it was computed, and the number of sessions — the table a person reads,
in a form a spreadsheet or a notebook loads without parsing ``results.txt``.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from mas.library.lab.report.table import better, row_label, row_order, scored_by

COLUMNS = ("metric", "label", "better", "scored_by", "flavour", "mean", "low", "high", "n",
           "method")


def table_rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Every cell of the table, in the table's row order, flavours in run order."""
    rows = []
    for metric in row_order(results):
        for flavour in results["flavours"]:
            entry = results["metrics"][flavour].get(metric)
            if not entry:
                continue
            rows.append({"metric": metric, "label": row_label(metric),
                         "better": better(metric, results),
                         "scored_by": scored_by(metric, results), "flavour": flavour,
                         "mean": entry["mean"],
                         "low": entry.get("low"), "high": entry.get("high"),
                         "n": entry.get("n"), "method": entry.get("method", "none")})
    return rows


def to_csv(rows: list[dict[str, Any]]) -> str:
    """The rows as CSV with a header line (empty cells for missing bounds)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: ("" if v is None else v) for k, v in row.items()} for row in rows)
    return buffer.getvalue()
