"""Issue 23's target on the generated long conversation: recall search finds at least
as many questions' evidence as Okapi BM25 within the same token budget, in both layouts
(benchmarks/recall_search.py)."""

from __future__ import annotations

from benchmarks.recall_search import build, run


def test_recall_finds_at_least_what_bm25_finds() -> None:
    rows = [r.strip("| ").split(" | ") for r in run(7, [200, 500]) if r.startswith("| ")][2:]
    shares = {(layout, method, budget): (float(one), float(two))
              for layout, method, budget, one, two in rows}
    for (layout, method, budget), found in shares.items():
        if method.startswith("bm25"):
            ours = shares[(layout, method.replace("bm25", "recall"), budget)]
            assert ours >= found, (layout, method, budget, ours, found)


def test_the_conversation_is_seeded_and_long() -> None:
    first, again = build(3), build(3)
    assert first.questions == again.questions and len(first.lines()) > 500
    assert any(len(q.evidence) == 2 for q in first.questions)
