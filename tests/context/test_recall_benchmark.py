"""Issue 23's target on the generated long conversation: recall search finds at least
as many questions' evidence as Okapi BM25 within the same token budget, in both layouts
(benchmarks/recall_search.py)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.recall_search import build, run, run_locomo

SAMPLE = (Path(__file__).resolve().parents[2]
          / "library-lab/examples/long-conversations/locomo-sample.json")


def assert_recall_at_least_bm25(table: list[str]) -> None:
    """Every recall row finds at least what the BM25 row of its layout and budget finds,
    and what BM25's ranking finds in recall's own format."""
    rows = [r.strip("| ").split(" | ") for r in table if r.startswith("| ")][2:]
    shares = {(layout, method, budget): (float(one), float(two))
              for layout, method, budget, one, two in rows}
    for (layout, method, budget), found in shares.items():
        if method.startswith("bm25"):
            ours = shares[(layout, method.replace("bm25", "recall"), budget)]
            assert ours >= found, (layout, method, budget, ours, found)
        if method == "recall's format, bm25 ranking":  # the rankings alone
            ours = shares[(layout, "recall", budget)]
            assert ours >= found, (layout, method, budget, ours, found)


def test_recall_finds_at_least_what_bm25_finds() -> None:
    assert_recall_at_least_bm25(run(7, [200, 500]))


def test_a_locomo_file_is_measured_as_the_lab_reads_it() -> None:
    table = run_locomo(SAMPLE, None, [500, 2000])  # 2,000: recall_max_tokens default
    assert table[0].startswith("locomo-sample.json: 3 conversation(s), 54 sessions")
    assert_recall_at_least_bm25(table)


def test_the_conversation_is_seeded_and_long() -> None:
    first, again = build(3), build(3)
    assert first.questions == again.questions and len(first.lines()) > 500
    assert any(len(q.evidence) == 2 for q in first.questions)
