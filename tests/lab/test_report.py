"""Results and the report: CIs, claims, the table, report.html and its SVG plots."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

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
    assert title.startswith("Context fill per turn: median and quartile band over the sessions")
    assert "(2 per flavour;" in title
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
    assert "<th>better</th><th>scored by</th>" in html and "<td>lower</td><td>lab</td>" in html
    assert "<td>GoalSuccessRate</td><td>higher</td><td>native</td>" in html
    assert "<td>FactRecall (final answer)</td><td>higher</td><td>computed</td>" in html
    assert "stack has a higher FactRecall than sliding_window: holds" in html
    assert "cost is 0 for every flavour" in html  # the offline model is free, and the page says so
    assert "the 2 paired differences" in html  # the differences behind each claim
    assert "href='sessions/stack/a-01/run-0/'" in html
    assert "summary_threshold: 400" in html and "offline/default" in html  # flavour config
    assert "mas-runtime " in html  # package versions
    table = (report_run / "results.txt").read_text()
    assert table.splitlines()[0].split() == ["metric", "(mean", "[95%", "interval])", "better",
                                             "summarising", "sliding_window", "stack"]
    # A judge row names the backend that scored it (the suite pins native), and a note says
    # what that means; the computed and usage rows have no backend to choose.
    labels = [re.split(r"\s{2,}", line)[0] for line in table.splitlines()[2:]]
    assert "GoalSuccessRate (native)" in labels and "FactRecall (final answer)" in labels
    assert "Judge rows name who scored them: (native) mas-lab's rubrics (eval_mce" in table
    backends = json.loads((report_run / "results.json").read_text())["backend"]
    assert (backends["GoalSuccessRate"], backends["FactRecall"], backends["PromptTokens"]) == (
        "native", "computed", "lab")
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
    assert first["scored_by"] == "computed"
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
    rescored = render_table({"flavours": ["x"], "metrics": {"x": {"GoalSuccessRate": {"mean": 1}}},
                             "backend": {"GoalSuccessRate": "mce+native"}})
    assert re.search(r"^GoalSuccessRate \(mce\+native\) +higher +1$", rescored, re.M)  # both ways
    assert ("(mce) MCE's own metric classes; (native) mas-lab's rubrics (eval_mce backend, "
            "docs/eval.md).") in rescored


@given(st.lists(st.text("abcdefgh_", min_size=1, max_size=30), min_size=1, max_size=7, unique=True),
       st.integers(60, 140))
def test_table_fits_the_width_and_keeps_every_cell(flavours: list[str], width: int) -> None:
    """With a width, each block's lines fit it (a cell wider than the width goes alone) and
    every flavour's column appears exactly once; without one the table is a single block."""
    metrics = {f: {"FactRecall": {"mean": 0.5, "low": 0.25, "high": 0.75}} for f in flavours}
    results = {"flavours": flavours, "metrics": metrics, "claims": [{"text": "word " * 60}],
               "sessions": {f: {"total": 3, "failed": 0} for f in flavours}}
    text = render_table(results, width)
    headers = [line for line in text.splitlines() if line.startswith("metric (mean")]
    assert [name for line in headers for name in line.split()[5:]] == flavours
    longest = max(len("metric (mean [95% interval])  better  "), *(len(f) + 40 for f in flavours))
    assert all(len(line) <= max(width, longest) for line in text.splitlines())
    assert len(render_table(results).split("metric (mean")) == 2


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
        == "2 (all 9 equal)"
    assert cell({"mean": 0.5, "low": 0.2, "high": 0.8, "n": 4, "method": "wilson"}) \
        == "0.5 [0.2, 0.8]"


def _results(values: dict[str, dict[str, list[float]]], *, degraded: str | None = None,
             better: dict[str, str] | None = None) -> dict[str, Any]:
    """A results.json document from per-session values (sessions i0, i1, ...)."""
    from mas.library.lab.stats import stable_seed

    flavours = list(values)
    return {
        "flavours": flavours, "better": better or {},
        "sessions": {f: {"total": 8, "failed": 0} for f in flavours},
        "degradation": {f: {"sessions": 2 if f == degraded else 0, "counts": {}} for f in flavours},
        "metrics": {f: {m: estimate(v, seed=stable_seed(0, f, m), resamples=500).to_json()
                        for m, v in per.items()} for f, per in values.items()},
        "samples": {f: {m: {f"i{i}#0": x for i, x in enumerate(v)} for m, v in per.items()}
                    for f, per in values.items()},
        "methods": {"seed": 0, "resamples": 500},
    }


def test_the_result_names_the_best_flavour_and_whether_the_pairs_separate_it() -> None:
    from mas.library.lab.report.result import findings

    results = _results({
        "a": {"ProbeRecall": [0.9, 0.8, 1.0, 0.9, 0.8, 1.0, 0.9, 0.9],
              "PromptTokens": [900, 950, 1000, 920, 980, 940, 960, 990]},
        "b": {"ProbeRecall": [0.2, 0.3, 0.1, 0.2, 0.3, 0.2, 0.1, 0.2],
              "PromptTokens": [910, 940, 1010, 930, 970, 950, 955, 985]},
        "c": {"ProbeRecall": [0.85, 0.8, 0.95, 0.9, 0.85, 0.9, 0.95, 0.8],
              "PromptTokens": [2000, 2100, 1900, 2050, 1950, 2000, 2020, 1980]}}, degraded="c")
    found = {f.metric: f for f in findings(results)}
    recall = found["ProbeRecall"]
    assert (recall.best, recall.runner_up) == ("a", "c")
    assert not recall.separated  # c is degraded: never a result
    assert "Degraded: c (2 of 8 sessions)" in recall.text
    tokens = found["PromptTokens"]
    assert tokens.direction == "lower" and tokens.best in ("a", "b") and not tokens.separated
    assert "does not separate it from" in tokens.text and "sign test p=" in tokens.text
    assert "does not separate it from c" in recall.text  # 0.9 vs 0.875: close, and degraded
    two = {**results, "flavours": ["a", "b"], "degradation": {}}
    clean = {f.metric: f for f in findings(two)}
    assert clean["ProbeRecall"].separated
    assert "the paired difference separates it from b" in clean["ProbeRecall"].text


def test_three_pairs_are_said_to_be_too_few_to_separate_anything() -> None:
    from mas.library.lab.report.result import findings

    results = _results({"a": {"FactRecall": [0.6, 0.7, 0.8]},
                        "b": {"FactRecall": [0.1, 0.2, 0.3]}})
    (finding,) = findings(results)
    assert not finding.separated and "only 3 paired session(s) in common with b, too few" in finding.text


def test_the_pareto_front_keeps_the_flavours_no_other_beats_on_both() -> None:
    from mas.library.lab.report.plots import pareto_front

    points = {"cheap_bad": (100.0, 0.2), "dear_good": (900.0, 0.9), "dominated": (950.0, 0.5),
              "middle": (400.0, 0.7), "twin": (400.0, 0.7)}
    assert pareto_front(points) == ["cheap_bad", "middle", "twin", "dear_good"]


def test_the_pareto_plot_has_intervals_both_ways_the_front_and_degraded_marked() -> None:
    from mas.library.lab.report.plots import pareto_plot

    results = _results({
        "a": {"ProbeRecall": [0.9, 0.8, 1.0, 0.9, 0.7], "PromptTokens": [900, 950, 990, 920, 980]},
        "b": {"ProbeRecall": [0.2, 0.3, 0.1, 0.2, 0.4], "PromptTokens": [400, 440, 410, 430, 420]},
        "c": {"ProbeRecall": [0.1, 0.2, 0.1, 0.3, 0.2], "PromptTokens": [2000, 2100, 1900, 2050,
                                                                         1950]}})
    svg = pareto_plot(results, degraded={"c"})
    assert svg is not None
    root = ET.fromstring(svg)
    groups = {g.get("data-series"): g for g in root.iter(f"{SVG}g") if g.get("class") == "series"}
    for name, g in groups.items():
        kinds = [line.get("class") for line in g.iter(f"{SVG}line")]
        assert kinds.count("error") == 1 and kinds.count("x-error") == 1, name
    assert groups["c"].get("data-degraded") == "true" and groups["a"].get("data-degraded") is None
    (front,) = [g for g in root.iter(f"{SVG}g") if g.get("class") == "pareto"]
    assert len(next(front.iter(f"{SVG}polyline")).get("points").split()) == 3  # b, step, a
    assert "(degraded)" in [t.text for t in root.iter(f"{SVG}text")]


def test_the_report_opens_with_the_result_and_lists_the_plugins_it_used(report_run: Path) -> None:
    html = (report_run / "report.html").read_text()
    assert html.index("id='result'") < html.index("id='results'")  # the result before the table
    assert "<li class='finding" in html and "id='pareto.svg'" in html
    info = json.loads((report_run / "run.json").read_text())
    used = {(p["kind"], p["type"]): p for p in info["plugins"]}
    assert used[("context_manager", "summarising")]["distribution"] == "mas-library-standard"
    assert used[("lab_step", "report")]["distribution"] == "mas-library-lab"
    assert used[("model_provider", "offline")]["distribution"] == "mas-library-standard"
    assert ("eval_metric", "fact_recall") in used or ("eval_metric", "probe_recall") in used \
        or any(kind == "eval_metric" for kind, _ in used)
    assert "id='plugins'" in html and "mas-library-standard" in html
    from mas.library.lab.report.timeline import timeline_writer

    if timeline_writer() is None:  # no kernel timeline: the report says so, links no page
        assert "No session timeline pages" in html and "timeline.html" not in html
    else:  # a page per session, each linked, each written
        pages = re.findall(r"<a class='timeline' href='([^']+)'>", html)
        assert len(pages) == 6 and all((report_run / page).is_file() for page in pages)


def test_the_flavour_table_shows_what_each_flavour_changes(report_run: Path) -> None:
    html = (report_run / "report.html").read_text()
    table = html[html.index("id='flavours'"):html.index("id='plugins'")]
    assert "changes from the base agent" in table
    rows = re.findall(r"<tr><td>(\w+)</td><td>[^<]*</td><td class='params'>(.*?)</td>", table)
    changed = dict(rows)
    assert set(changed) == {"summarising", "sliding_window", "stack"}
    assert all(len(value.split("<br>")) < 8 for value in changed.values()), changed


def test_timeline_pages_are_written_per_session_and_each_failure_is_named(tmp_path: Path) -> None:
    from mas.library.lab.report.timeline import write_timelines
    from mas.runtime.errors import MasError

    for folder in ("sessions/a/i/run-0", "sessions/a/j/run-0"):
        (tmp_path / folder).mkdir(parents=True)

    def writer(run_dir: Path, out: Path | None) -> Path:
        if run_dir.parent.name == "j":
            raise MasError(f"{run_dir}: no events.jsonl")
        assert out is not None
        out.write_text("<html></html>")
        return out

    links, note = write_timelines(tmp_path, ["sessions/a/i/run-0", "sessions/a/j/run-0"], writer)
    assert links == {"sessions/a/i/run-0": "sessions/a/i/run-0/timeline.html"}
    assert (tmp_path / "sessions/a/i/run-0/timeline.html").is_file()
    assert note is not None and note.startswith("1 of 2 session timeline page(s) could not be")
    assert "sessions/a/j/run-0 (MasError:" in note
    none, why = write_timelines(tmp_path, ["sessions/a/i/run-0"], None)
    assert none == {} and why is not None and "no mas.runtime.timeline" in why


def _dominates(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] <= b[0] and a[1] >= b[1] and a != b


@given(st.dictionaries(st.text("abcdefgh", min_size=1, max_size=3),
                       st.tuples(st.integers(0, 50).map(float), st.integers(0, 10).map(float)),
                       min_size=1, max_size=8))
def test_the_pareto_front_is_exactly_the_undominated_flavours(
        points: dict[str, tuple[float, float]]) -> None:
    from mas.library.lab.report.plots import pareto_front

    front = pareto_front(points)
    assert front  # someone is always undominated
    for name, point in points.items():
        beaten = any(_dominates(other, point) for other in points.values())
        assert (name in front) == (not beaten), name
    assert [points[f][0] for f in front] == sorted(points[f][0] for f in front)


def test_the_screenshot_script_says_how_to_get_chromium_and_exits_2_without_it(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util
    import shutil

    path = Path(__file__).resolve().parents[2] / "docs" / "screenshots.py"
    spec = importlib.util.spec_from_file_location("docs_screenshots", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert "lab-report" in module.SHOTS  # the report's shot is one of make screenshots'
    assert module.main(["lab-report"]) == 2
    assert "apt-get install chromium" in capsys.readouterr().err


def test_every_chart_marks_a_degraded_flavour() -> None:
    from mas.library.lab.report.svg import strip_chart

    charts = [strip_chart("s", "v", [("ok", [1.0, 2.0]), ("bad", [0.5])], degraded={"bad"}),
              bar_chart("b", "x", "y", ["i1"], [("ok", [1.0]), ("bad", [2.0])], degraded={"bad"}),
              line_chart("l", "x", "y", [Series("ok", [(0, 1), (1, 2)]),
                                         Series("bad", [(0, 2), (1, 3)], degraded=True)])]
    for svg in charts:
        root = ET.fromstring(svg)
        flags = {g.get("data-series"): g.get("data-degraded") for g in root.iter(f"{SVG}g")
                 if g.get("class") == "series"}
        assert flags == {"ok": None, "bad": "true"}
        assert "(degraded)" in [t.text for t in root.iter(f"{SVG}text")]
        assert root.get("width") == "100%"  # as wide as the page


@given(st.lists(st.lists(st.integers(0, 10_000), min_size=1, max_size=6), min_size=1,
                max_size=6))
def test_the_fill_band_holds_its_median_between_its_quartiles(sessions: list[list[int]]) -> None:
    from mas.library.lab.report.plots import fill_band

    rows = [{"fill": [{"turn": i + 1, "estimated_tokens": v} for i, v in enumerate(values)]}
            for values in sessions]
    band = fill_band(rows)
    assert [turn for turn, *_ in band] == list(range(1, max(map(len, sessions)) + 1))
    for turn, low, median, high in band:
        reached = [values[int(turn) - 1] for values in sessions if len(values) >= turn]
        assert min(reached) <= low <= median <= high <= max(reached)
