"""Issue 22: the compaction-regime figures of ``make bench`` run in the test venv.

The test venv has none of the peers (langchain, langmem): the quick regime run must still
compute every mas-lab row and report each peer "not installed" instead of crashing.
``--only`` writes just its figures' sections into an existing results file.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    """The ``benchmarks`` package (it lives beside the distributions, not inside one)."""
    sys.path.insert(0, str(ROOT))
    try:
        import benchmarks.__main__ as entry

        yield entry
    finally:
        sys.path.remove(str(ROOT))


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def test_quick_regime_computes_mas_lab_rows_and_reports_missing_peers(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "RESULTS.md"
    assert bench.main(["--only", "regime", "--quick", "--out", str(out)]) == 0
    text = out.read_text()
    from benchmarks import regime

    lines = text.splitlines()
    over = next(line for line in lines if line.startswith("| strategy | summarizer calls"))
    column = [c.strip() for c in over.split("|")].index("requests over budget")
    for label in regime.STRATEGIES:
        rows = [line for line in lines if line.startswith(f"| mas-lab {label} |")]
        assert rows, label
        assert rows[0].split("|")[column].strip().isdigit(), rows[0]  # computed, not "-"
    for label in regime.TIMED:  # the cost table, time per turn, cold bound
        timed = [line for line in lines if line.startswith(f"| mas-lab {label} |")]
        assert len(timed) == 3 and all(" ms |" in line for line in timed[1:]), timed
    cost, per_turn, cold = (f"## Compaction regime: {what}" for what in
                            ("30 tool-heavy turns", "time per turn", "cold bound"))
    for head in (cost, per_turn, cold):
        assert any(line.startswith(head) for line in lines), head
    for peer, module in (("langmem summarize_messages", "langmem"),
                         ("langchain SummarizationMiddleware", "langchain")):
        if _installed(module):
            assert f"| {peer} |" in text
        else:
            assert f"- {peer}: not installed" in text
    if not _installed("langchain_core"):
        assert "- langchain-core trim_messages: not installed" in text
        assert text.count("**not measured**") >= 4  # two time figures: section and row
    assert "Correctness over" not in text  # --only ran nothing else


def test_only_refuses_an_unknown_figure(bench: ModuleType,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        bench.main(["--only", "regim"])
    assert stopped.value.code == 2
    assert "--only: invalid choice: 'regim'" in capsys.readouterr().err


_cell = st.text(st.characters(blacklist_characters="|\n\r", blacklist_categories=["Cs"]),
                max_size=12)


@given(old=st.lists(_cell, min_size=1, max_size=3), new=st.lists(_cell, min_size=1, max_size=3),
       met=st.sampled_from([True, False, None]), index=st.integers(0, 2))
def test_splice_replaces_one_section_and_its_target_row(
    bench: ModuleType, old: list[str], new: list[str], met: bool | None, index: int
) -> None:
    from benchmarks.figures import Figure
    from benchmarks.report import render, splice

    def figs(notes: list[str], chosen: bool | None) -> list[Figure]:
        made = [Figure(f"figure {i}", f"target {i}", ["a"], [[f"row {i}"]], met=True,
                       notes=[f"note {i}"]) for i in range(3)]
        made[index] = Figure(f"figure {index}", f"target {index}", ["a"],
                             [[n] for n in notes], met=chosen, notes=notes)
        return made

    header = {"command": "x"}
    before = render(figs(old, None), header=header, versions={})
    after = render(figs(new, met), header=header, versions={})
    assert splice(before, [figs(new, met)[index]]) == after


def test_splice_adds_a_figure_the_file_does_not_have(bench: ModuleType) -> None:
    from benchmarks.figures import Figure
    from benchmarks.report import render, splice

    first = Figure("first", "t1", ["a"], [["1"]], met=True)
    added = Figure("added", "t2", ["a"], [["2"]], met=False, notes=["n"])
    header = {"command": "x"}
    assert splice(render([first], header=header, versions={}), [added]) == render(
        [first, added], header=header, versions={})
