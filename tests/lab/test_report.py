"""Results and the report: CIs, claims, the table, report.html and its SVG plots."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from mas.library.lab import run_experiment
from mas.library.lab.report.svg import Series, bar_chart, line_chart, nice_ticks
from mas.library.lab.report.table import cell, render_table
from mas.library.lab.stats import Estimate, estimate
from mas.library.lab.steps.aggregate import Claim, check_claim
from mas.runtime import Runtime

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def report_run(tmp_path_factory: pytest.TempPathFactory, runtime: Runtime, make_experiment: Any) -> Path:
    root = tmp_path_factory.mktemp("report")
    post = ("      - type: aggregate\n        config:\n          compare:\n"
            "            - {metric: FactRecall, better: stack, than: sliding_window}\n"
            "            - {metric: PromptTokens, better: stack, than: sliding_window, direction: lower}\n")
    outcome = run_experiment(runtime, make_experiment(root / "exp", post=post), runs_root=root / "runs")
    assert outcome.ok
    return outcome.run.path


def _series(path: Path) -> list[str]:
    tree = ET.parse(path)
    return [g.get("data-series") for g in tree.iter(f"{SVG}g") if g.get("class") == "series"]


def test_each_plot_exists_is_substantial_and_has_one_series_per_flavour(report_run: Path) -> None:
    flavours = ["summarising", "sliding_window", "stack"]
    for name in ("pareto.svg", "context_fill.svg", "distribution_ProbeRecall.svg",
                 "distribution_FactRecall.svg", "distribution_PromptTokens.svg",
                 "summarizer_calls.svg"):
        path = report_run / "plots" / name
        assert path.stat().st_size > 1500, name
        assert _series(path) == flavours, name


def test_context_fill_draws_a_median_and_quartile_band_per_flavour_and_the_trigger(
        report_run: Path) -> None:
    tree = ET.parse(report_run / "plots" / "context_fill.svg")
    groups = {g.get("data-series"): g for g in tree.iter(f"{SVG}g") if g.get("class") == "series"}
    # one median line and one band per flavour, not a line per session
    for name, g in groups.items():
        medians = [p for p in g.iter(f"{SVG}polyline") if p.get("class") == "median"]
        bands = [p for p in g.iter(f"{SVG}polygon") if p.get("class") == "band"]
        assert len(medians) == 1 and len(bands) == 1, name
    # the longer item has one point per turn (12 turns): the median reaches turn 12
    stack = next(p for p in groups["stack"].iter(f"{SVG}polyline") if p.get("class") == "median")
    assert len(stack.get("points").split()) == 12
    title = next(tree.iter(f"{SVG}title")).text
    assert title.startswith("Context fill per turn: median and quartile band of 2 sessions")
    rings = [c for c in groups["summarising"].iter(f"{SVG}circle") if c.get("class") == "marker"]
    assert rings and not [c for c in groups["stack"].iter(f"{SVG}circle") if c.get("class") == "marker"]
    references = [g.get("data-reference") for g in tree.iter(f"{SVG}g") if g.get("class") == "reference"]
    # where summarising compacts (its summary_threshold), not the window; only it compacted
    assert references[0] == "soft trigger 400 (summarising)"
    assert references[1].startswith("hard request budget ~")


def test_headline_axis_is_the_share_range_and_tokens_start_at_zero(report_run: Path) -> None:
    tree = ET.parse(report_run / "plots" / "pareto.svg")
    labels = [t.text for t in tree.iter(f"{SVG}text")]
    assert labels[0].startswith("ProbeRecall against prompt tokens")
    ticks = [float(t) for t in labels if t and re.fullmatch(r"-?[0-9.]+", t)]
    assert min(ticks) == 0 and max(t for t in ticks if t <= 1.0) == 1.0
    assert "-0.25" not in labels and "1.25" not in labels  # never past the ends of a share


def test_report_html_embeds_the_plots_the_table_and_the_claims(report_run: Path) -> None:
    html = (report_run / "report.html").read_text()
    assert html.count("<svg") == 6
    assert "FactRecall (final answer)" in html and "pair-safety violations" in html
    assert "<th>better</th>" in html and "<td>lower</td>" in html
    assert "stack has a higher FactRecall than sliding_window: holds" in html
    assert "cost is 0 for every flavour" in html  # the offline model is free, and the page says so
    assert "the 2 paired differences" in html  # the differences behind each claim
    assert "href='sessions/stack/a-01/run-0/'" in html
    assert "summary_threshold: 400" in html and "offline/default" in html  # flavour config
    assert "mas-runtime " in html  # package versions
    table = (report_run / "results.txt").read_text()
    assert table.splitlines()[0].split() == ["metric", "(mean", "[95%", "interval])", "better",
                                             "summarising", "sliding_window", "stack"]
    for label in ("prompt tokens (agent turns)", "summarizer calls", "summarizer tokens", "LLM calls",
                  "cost USD", "cache-hit rate (prompt)", "compactions", "GoalSuccessRate"):
        assert label in table


def test_the_table_is_exported_as_csv_and_json(report_run: Path) -> None:
    import csv
    import json

    rows = json.loads((report_run / "results_table.json").read_text())
    with (report_run / "results_table.csv").open() as handle:
        from_csv = list(csv.DictReader(handle))
    assert len(rows) == len(from_csv) > 10
    first = rows[0]
    assert (first["metric"], first["better"], first["method"]) == ("FactRecall", "higher", "wilson")
    assert from_csv[0]["flavour"] == first["flavour"] and float(from_csv[0]["mean"]) == first["mean"]
    assert {r["flavour"] for r in rows} == {"summarising", "sliding_window", "stack"}


def test_claims_are_checked_honestly() -> None:
    results = {"a": {"M": Estimate(0.9, 0.85, 0.95, 5)}, "b": {"M": Estimate(0.5, 0.2, 0.88, 5)}}
    held = check_claim(Claim(metric="M", better="a", than="b"), results)
    assert held["holds"] and not held["clear"]
    assert held["text"] == ("a has a higher M than b: holds, but not clearly (0.9 vs 0.5; 95% "
                            "intervals overlap)")
    reverse = check_claim(Claim(metric="M", better="b", than="a"), results)
    assert reverse["holds"] is False and "does NOT hold" in reverse["text"]
    lower = check_claim(Claim(metric="M", better="b", than="a", direction="lower"), results)
    assert lower["holds"] is True
    missing = check_claim(Claim(metric="M", better="a", than="zzz"), results)
    assert missing["holds"] is None and "no M for flavour 'zzz'" in missing["text"]


def test_paired_claims_use_the_per_session_differences() -> None:
    # Sessions vary a lot, but b is above a on every one of them: the paired test sees it.
    a = {"i1": 10.0, "i2": 100.0, "i3": 1000.0}
    b = {"i1": 12.0, "i2": 103.0, "i3": 1004.0}
    results = {name: {"T": estimate(list(v.values()))} for name, v in (("a", a), ("b", b))}
    claim = check_claim(Claim(metric="T", better="a", than="b", direction="lower"), results,
                        {"a": {"T": a}, "b": {"T": b}})
    assert results["a"]["T"].overlaps(results["b"]["T"])
    assert claim["holds"] and claim["clear"]
    assert "paired over 3 sessions, 95% CI [" in claim["text"]
    assert claim["paired"]["wins"] == 3 and [d["difference"] for d in claim["differences"]] == [-2, -3, -4]


def test_table_cells() -> None:
    assert cell(None) == "-"
    assert cell({"mean": 1234.4, "low": 1000.0, "high": 1468.8}) == "1,234 [1,000, 1,469]"
    assert cell({"mean": 0.5, "low": None, "high": None}) == "0.5"
    text = render_table({"flavours": ["x"], "metrics": {"x": {"FactRecall": {"mean": 1, "low": 1, "high": 1}}},
                         "sessions": {"x": {"total": 1, "failed": 0}}, "claims": [{"text": "a claim"}]})
    assert "FactRecall (final answer)     higher  1 [1, 1]" in text and text.endswith("* a claim")


def test_svg_helpers() -> None:
    assert nice_ticks(0, 9) == [0, 2, 4, 6, 8, 10]
    chart = line_chart("t <&>", "x", "y", [Series("a", [(1, 1), (2, 3)], markers=[(2, 3)]),
                                           Series("b", [(1, 2)], errors=[(1, 1.5, 2.5)])],
                       references=[("limit", 4.0)])
    root = ET.fromstring(chart)
    assert root.find(f"{SVG}title").text == "t <&>"
    assert [g.get("data-series") for g in root.iter(f"{SVG}g") if g.get("class") == "series"] == ["a", "b"]
    bars = bar_chart("b", "x", "y", ["i1", "i2"], [("a", [1.0, 0.0]), ("b", [2.0, 3.0])])
    assert len(re.findall(r"<rect [^>]*fill=\"#", bars)) == 4 + 2  # 4 bars, 2 legend swatches


def test_a_re_rendered_report_still_names_each_flavours_configuration(
        tmp_path: Path, runtime: Runtime, make_experiment: Any) -> None:
    from mas.library.lab.lab import report_run

    outcome = run_experiment(runtime, make_experiment(tmp_path / "exp"),
                             runs_root=tmp_path / "runs", flavours=["summarising"], limit=1)
    assert outcome.ok
    (outcome.run.path / "report.html").unlink()
    again = report_run(runtime, outcome.run.path)  # no experiment loaded: the run folder only
    assert again.ok
    html = (outcome.run.path / "report.html").read_text()
    assert "<td>summarising</td><td>summarising</td>" in html
    assert "summary_threshold: 400" in html and "offline/default" in html
    assert "the sessions&#x27; transcript.json" in html


def test_each_row_says_the_way_its_metric_declares_and_claims_default_to_it() -> None:
    from mas.library.lab.report.table import better

    entry = {"mean": 0.5, "low": 0.4, "high": 0.6, "n": 8, "method": "bootstrap"}
    results: dict[str, Any] = {"metrics": {"a": {"ToolErrorRate": entry, "Compactions": entry,
                                                 "FactRecall": entry, "PromptTokens": entry}},
                               "better": {"ToolErrorRate": "lower", "Compactions": "neither"}}
    assert better("ToolErrorRate", results) == "lower"
    assert better("Compactions", results) == "-"
    assert better("FactRecall", results) == "higher"
    assert better("PromptTokens", results) == "lower"  # an old results.json: the lab's own way
    estimates = {"a": {"E": Estimate(0.1, 0.05, 0.15, 8)}, "b": {"E": Estimate(0.3, 0.2, 0.4, 8)}}
    claim = check_claim(Claim(metric="E", better="a", than="b"), estimates, better={"E": "lower"})
    assert claim["direction"] == "lower" and claim["holds"] and claim["clear"]
    neither = check_claim(Claim(metric="E", better="a", than="b"), estimates,
                          better={"E": "neither"})
    assert neither["holds"] is None and "no better direction" in neither["text"]


def test_a_bootstrap_too_small_to_stand_says_so_instead_of_a_zero_width_interval() -> None:
    assert cell({"mean": 0.667, "low": 0.667, "high": 0.667, "n": 3, "method": "bootstrap"}) \
        == "0.667 (n=3: too few for an interval)"
    assert cell({"mean": 2.0, "low": 2.0, "high": 2.0, "n": 9, "method": "bootstrap"}) \
        == "2 (all 9 equal: no spread to bound)"
    assert cell({"mean": 0.5, "low": 0.2, "high": 0.8, "n": 4, "method": "wilson"}) \
        == "0.5 [0.2, 0.8]"
