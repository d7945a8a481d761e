"""The evidence metrics: three cumulative shares of probes whose evidence was available."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mas.library.eval import bind_metrics
from mas.library.eval.metrics.evidence import (
    EvidenceParams,
    EvidenceVerbatim,
    EvidenceWithRecall,
    EvidenceWithSummary,
)
from mas.library.eval.run import SessionRun, load_run
from mas.runtime import Runtime


def _line(verbatim: bool = False, summary: bool = False, words: float = 0.0,
          recall: bool = False) -> dict[str, Any]:
    return {"verbatim": verbatim, "summary": summary, "summary_words": words, "recall": recall}


def _run(probes: list[dict[str, Any]]) -> SessionRun:
    return SessionRun(path=Path("."), session_id="s", probes=probes)


PROBES = [
    {"probe": 0, "kind": "1", "evidence": [_line(verbatim=True)]},
    {"probe": 1, "kind": "1", "evidence": [_line(verbatim=True), _line(summary=True)]},
    {"probe": 2, "kind": "2", "evidence": [_line(words=0.9)], "evidence_unresolved": 1},
    {"probe": 3, "kind": "2", "evidence": [_line(recall=True)]},
    {"probe": 4, "kind": "2", "evidence": [_line()]},
    {"probe": 5, "kind": "5", "evidence": []},  # no evidence: not counted
]


def test_the_three_levels_are_cumulative_shares() -> None:
    run = _run(PROBES)
    verbatim = EvidenceVerbatim().compute(run)
    summary = EvidenceWithSummary().compute(run)
    recall = EvidenceWithRecall().compute(run)
    assert (verbatim.value, summary.value, recall.value) == (0.2, 0.6, 0.8)
    assert verbatim.detail["trials"] == 5 and verbatim.detail["successes"] == 1
    assert recall.detail["by_category"] == {"1": {"successes": 2, "trials": 2},
                                            "2": {"successes": 2, "trials": 3}}
    assert recall.detail["with_unresolved"] == 1
    assert recall.reasoning \
        == "4 of 5 probe(s) had every evidence line verbatim, in the summary or recalled"


def test_a_probe_whose_evidence_names_no_line_is_left_out_and_said() -> None:
    nameless = {"probe": 6, "kind": "1", "evidence": [], "evidence_unresolved": 2}
    result = EvidenceVerbatim().compute(_run([*PROBES, nameless]))
    assert result.value == 0.2 and result.detail["trials"] == 5
    assert result.detail["left_out_unresolved"] == 1
    assert result.reasoning == ("1 of 5 probe(s) had every evidence line verbatim in the "
                                "request; 1 probe(s) left out: their evidence names no line "
                                "of the conversation")
    alone = EvidenceVerbatim().compute(_run([nameless]))
    assert alone.status == "not_applicable"
    assert alone.error is not None and "1 probe(s) left out" in alone.error
    assert EvidenceVerbatim().compute(_run(PROBES)).detail["left_out_unresolved"] == 0


def test_summary_words_decides_what_a_paraphrase_earns() -> None:
    run = _run(PROBES)
    assert EvidenceWithSummary(EvidenceParams(summary_words=None)).compute(run).value == 0.4
    assert EvidenceWithSummary(EvidenceParams(summary_words=0.95)).compute(run).value == 0.4
    assert EvidenceWithSummary(EvidenceParams(summary_words=0.5)).compute(run).value == 0.6


def test_no_probe_with_evidence_is_not_applicable() -> None:
    result = EvidenceVerbatim().compute(_run([{"probe": 0, "evidence": []}]))
    assert result.value is None and result.status == "not_applicable"


@given(st.lists(st.lists(st.builds(_line, st.booleans(), st.booleans(),
                                   st.floats(0, 1), st.booleans()), min_size=1, max_size=4),
                min_size=1, max_size=12))
def test_more_places_never_find_less(lines: list[list[dict[str, Any]]]) -> None:
    run = _run([{"probe": i, "kind": "k", "evidence": e} for i, e in enumerate(lines)])
    values = [cls().compute(run).value for cls in (EvidenceVerbatim, EvidenceWithSummary,
                                                    EvidenceWithRecall)]
    assert values == sorted(values)  # type: ignore[type-var]


def test_they_are_ready_made_and_read_probes_jsonl(tmp_path: Path) -> None:
    runtime = Runtime.create()
    ids = {m.id for m in bind_metrics(runtime)}
    assert {"EvidenceVerbatim", "EvidenceWithSummary", "EvidenceWithRecall"} <= ids
    (tmp_path / "transcript.json").write_text('{"session_id": "s", "messages": []}')
    (tmp_path / "probes.jsonl").write_text(
        '{"probe": 0, "kind": "4", "evidence": [{"verbatim": true}]}\n{"probe": 1, "ev')
    run = load_run(tmp_path)
    assert len(run.probes) == 1 and run.warnings == ["probes.jsonl:2: skipped a line that is "
                                                     "not JSON"]
    assert EvidenceVerbatim().compute(run).value == 1.0


def test_an_errored_session_is_not_scored() -> None:
    run = _run(PROBES)
    run.error = "boom"
    assert EvidenceVerbatim().missing_input(run) == "agent errored: boom"


@pytest.mark.parametrize("bad", [{"summary_words": 0}, {"summary_words": 1.5}, {"x": 1}])
def test_bad_params(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        EvidenceParams.model_validate(bad)
