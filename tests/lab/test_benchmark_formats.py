"""Datasets in the public benchmark formats (LoCoMo, LongMemEval) and isolated probes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mas.library.lab.dataset import MAX_PROBLEMS, Item, load_dataset, unresolved_evidence
from mas.library.lab.experiment import load_lab_experiment
from mas.library.lab.formats import stream
from mas.library.lab.formats.stream import json_array_items
from mas.runtime import Runtime
from mas.runtime.errors import ManifestError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "benchmarks"
LOCOMO = FIXTURES / "locomo_tiny.json"
LONGMEMEVAL = FIXTURES / "longmemeval_tiny.json"


def _lines(caught: pytest.ExceptionInfo[ManifestError]) -> list[str]:
    return [p.format() for p in caught.value.problems]


def test_locomo_maps_a_turn_per_session_and_a_probe_per_question() -> None:
    first = load_dataset(LOCOMO, format="locomo").items[0]
    assert first.id == "tiny-1" and len(first.turns) == 2  # the empty session_3 has no turn
    session = first.turn(0).user
    assert session.startswith("Session 1, 9:05 am on 3 March, 2024 (Ines and Tomas)\n")
    assert "Ines: Her name is Pimenta, after my grandmother's kitchen. [shares a photo: a photo" \
        in session
    probes = first.probes
    assert [p.kind for p in probes] == ["4", "1", "2", "5"]
    assert all(p.turn == 2 and p.question for p in probes)  # after the last session
    assert probes[0].expected == ["Pimenta"] and probes[0].evidence_ids == ["D1:3"]
    assert probes[0].evidence[0] in session
    assert probes[1].evidence_unresolved == 1  # D9:9 names no line: counted, not fatal
    assert probes[2].expected == ["2024"] and probes[2].evidence_ids == ["D1:1", "D1:3"]
    assert probes[3].expected == [] and probes[3].evidence == []  # adversarial, no answer


def test_evidence_ids_that_name_no_line_are_said_once_for_the_dataset(tmp_path: Path) -> None:
    assert unresolved_evidence(load_dataset(LONGMEMEVAL, format="longmemeval").items) is None
    data = json.loads(LOCOMO.read_text())
    data[0]["qa"][0]["evidence"] = ["D7:1", "D7:2"]  # nothing it names exists
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(data))
    assert unresolved_evidence(load_dataset(path, format="locomo").items) == (
        "dataset: 3 evidence id(s) in 2 question(s) name no line of their conversation: "
        "judged on the lines they name; left out of the evidence metrics: 1 naming none")


def test_longmemeval_maps_the_haystack_and_its_has_answer_turns() -> None:
    items = load_dataset(LONGMEMEVAL, format="longmemeval").items
    first = items[0]
    assert first.id == "tiny-q1" and len(first.turns) == 2
    assert first.turn(1).user.startswith("Session s-b, 2023/05/28 (Sun) 19:02\nuser: I just")
    (probe,) = first.probes
    assert probe.turn == 2 and probe.kind == "single-session-user"
    assert probe.asked().user == "(Today is 2023/06/02 (Fri) 10:00.) Which degree did I finish?"
    assert probe.evidence == ["user: I just finished my degree in Marine Biology and need a CV "
                              "template."]
    assert items[1].probes[0].expected == ["2"]


def test_limit_reads_only_the_start_of_the_file(tmp_path: Path) -> None:
    data = json.loads(LOCOMO.read_text())
    broken = tmp_path / "locomo.json"
    # Everything after the first element is garbage: with limit 1 it is never parsed.
    broken.write_text("[" + json.dumps(data[0]) + ", {not json at all")
    assert [i.id for i in load_dataset(broken, format="locomo", limit=1).items] == ["tiny-1"]
    with pytest.raises(ManifestError) as caught:
        load_dataset(broken, format="locomo")
    assert _lines(caught) == [f"{broken}: [1]: not valid JSON (Expecting property name "
                              "enclosed in double quotes)"]


@pytest.mark.parametrize(("source", "fmt"), [(LOCOMO, "locomo"), (LONGMEMEVAL, "longmemeval")])
def test_a_file_saved_with_a_byte_order_mark_reads_the_same(tmp_path: Path, source: Path,
                                                            fmt: str) -> None:
    marked = tmp_path / source.name
    marked.write_bytes(b"\xef\xbb\xbf" + source.read_bytes())
    assert (load_dataset(marked, format=fmt).items
            == load_dataset(source, format=fmt).items)


def test_questions_takes_the_first_n_of_each_item() -> None:
    items = load_dataset(LOCOMO, format="locomo", questions=2).items
    assert [len(i.probes) for i in items] == [2, 1]


@pytest.mark.parametrize(("fmt", "edit", "expected"), [
    ("locomo", lambda d: d[0].pop("sample_id"), "[0].sample_id: Field required"),
    ("locomo", lambda d: d[0]["conversation"].update(session_1="hello"),
     "[0].conversation.session_1: must be a list of dialog lines (got 'str')"),
    ("locomo", lambda d: d[0]["qa"][0].update(category=[1]), "[0].qa[0].category: "),
    ("locomo", lambda d: d[1]["conversation"]["session_1"][1].update(dia_id="D1:1"),
     "[1].conversation.session_1[1].dia_id: two lines have this dia_id (got 'D1:1')"),
    ("locomo", lambda d: d[1].update(sample_id="../up"), "[1].sample_id: must "
     "not contain '/' or '\\' (it becomes a folder name) (got '../up')"),
    ("longmemeval", lambda d: d[0].update(question_id="a/b"), "[0].question_id: must "),
    ("longmemeval", lambda d: d[0]["haystack_dates"].pop(),
     "[0].haystack_dates: has 1 entries for 2 haystack_sessions (got 1)"),
    ("longmemeval", lambda d: d[1]["haystack_sessions"][0][0].pop("role"),
     "[1].haystack_sessions[0][0].role: Field required"),
    # A blank question would be asked as the date alone (LongMemEval) or as nothing.
    ("locomo", lambda d: d[0]["qa"][0].update(question=" \n"),
     "[0].qa[0].question: must not be blank (got ' \\n')"),
    ("longmemeval", lambda d: d[0].update(question="   "),
     "[0].question: must not be blank (got '   ')"),
])
def test_a_bad_element_is_one_line_naming_the_field(tmp_path: Path, fmt: str, edit: Any,
                                                    expected: str) -> None:
    source = LOCOMO if fmt == "locomo" else LONGMEMEVAL
    data = json.loads(source.read_text())
    edit(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ManifestError) as caught:
        load_dataset(path, format=fmt)
    (line,) = _lines(caught)
    assert line.startswith(f"{path}: {expected}")


@pytest.mark.parametrize(("source", "fmt", "expected"), [
    (LONGMEMEVAL, "locomo", "is a LongMemEval element (question_id, haystack_sessions), but the "
     "dataset's format is locomo: set experiment.dataset.format: longmemeval"),
    (LOCOMO, "longmemeval", "is a LoCoMo element (sample_id, conversation), but the dataset's "
     "format is longmemeval: set experiment.dataset.format: locomo"),
])
def test_a_file_of_the_other_format_is_one_line_naming_it(source: Path, fmt: str,
                                                          expected: str) -> None:
    # Not every element's missing fields (two a question, for every question of the file).
    with pytest.raises(ManifestError) as caught:
        load_dataset(source, format=fmt)
    assert _lines(caught) == [f"{source}: [0]: {expected}"]


@pytest.mark.parametrize(("source", "fix"), [
    (LOCOMO, "a LoCoMo file: set experiment.dataset: {path: ..., format: locomo}"),
    (LONGMEMEVAL, "a LongMemEval file: set experiment.dataset: {path: ..., format: longmemeval}"),
    (None, "a benchmark file needs experiment.dataset.format (locomo or longmemeval)"),
])
def test_an_array_read_as_json_lines_is_one_line(tmp_path: Path, source: Path | None,
                                                 fix: str) -> None:
    # A benchmark file given as a plain path (format jsonl): one line, not one per line.
    path = tmp_path / "array.json"
    path.write_text("\n" + (source.read_text() if source else "[1,\n 2]"))
    with pytest.raises(ManifestError) as caught:
        load_dataset(path, format="jsonl")
    assert _lines(caught) == [f"{path}: line 2: opens a JSON array, but a JSON Lines dataset "
                              f"has an item (a JSON object) per line; {fix}"]


@pytest.mark.parametrize("fmt", ["locomo", "jsonl"])
def test_a_file_wrong_everywhere_stops_after_max_problems(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "bad.json"
    if fmt == "locomo":
        element = json.loads(LOCOMO.read_text())[0]
        element["qa"][0]["category"] = "x"
        path.write_text(json.dumps([{**element, "sample_id": f"s{i}"} for i in range(60)]))
    else:
        path.write_text("".join(f'{{"id": "i{i}"}}\n' for i in range(60)))  # no turns
    with pytest.raises(ManifestError) as caught:
        load_dataset(path, format=fmt)
    lines = _lines(caught)
    assert len(lines) == MAX_PROBLEMS + 1
    assert lines[-1] == (f"{path}: stopped after {MAX_PROBLEMS} problems; the rest of the "
                         "file was not checked")
    first = "[0].qa[0].category: " if fmt == "locomo" else "line 1.turns: "
    assert lines[0].startswith(f"{path}: {first}")


def test_a_file_that_is_not_an_array(tmp_path: Path) -> None:
    path = tmp_path / "object.json"
    path.write_text('{"sample_id": "x"}')
    with pytest.raises(ManifestError) as caught:
        load_dataset(path, format="locomo")
    assert _lines(caught) == [f"{path}: a LoCoMo or LongMemEval file is one JSON array (the "
                              "file does not start with '[')"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=3),
    max_leaves=8), max_size=6), st.sampled_from([None, 1, 2]), st.integers(1, 7))
def test_the_stream_reader_returns_the_array(values: list[Any], indent: int | None,
                                             chunk: int) -> None:
    """Element by element, in chunks as small as one character, the reader returns what
    json.loads would (the invariant behind the bounded memory)."""
    import tempfile

    text = json.dumps(values, indent=indent)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "a.json"
        path.write_text(text, encoding="utf-8")
        original = stream.CHUNK
        stream.CHUNK = chunk
        try:
            assert list(json_array_items(path, "a.json")) == json.loads(text)
        finally:
            stream.CHUNK = original


def test_isolated_probes_leave_the_turns_they_asked() -> None:
    item = Item.model_validate({"id": "x", "turns": ["a", "q1?", "b", "q2?", "c"], "probes": [
        {"turn": 1, "expected": ["A"]}, {"turn": 3, "expected": ["B"]}]})
    isolated = item.isolated()
    assert isolated.turns == ["a", "b", "c"]
    assert [(p.turn, p.question) for p in isolated.probes] == [(1, "q1?"), (2, "q2?")]
    everything = Item.model_validate({"id": "y", "turns": ["q?"], "probes": [
        {"turn": 0, "expected": ["A"]}]})
    with pytest.raises(ValueError, match="every turn is a probe"):
        everything.isolated()


def test_inline_makes_the_questions_turns_that_accumulate() -> None:
    (item, _) = load_dataset(LOCOMO, format="locomo", probes="inline").items
    assert len(item.turns) == 6  # two sessions, then the four questions
    # The adversarial one is a plain turn: it has nothing to check.
    assert [p.turn for p in item.probes] == [2, 3, 4] and all(p.question is None for p in item.probes)
    assert item.turn(2).user == "What is the name of Ines's cat?"
    assert item.turn(5).user == "What colour is Tomas's dog?"
    assert item.turn(1).user.startswith("Session 2")
    again = item.isolated()
    assert len(again.turns) == 3 and [p.turn for p in again.probes] == [2, 2, 2]


def test_an_inline_probe_needs_an_expected_string(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"id": "x", "turns": ["a"], "probes": [{"turn": 0}]}) + "\n")
    with pytest.raises(ManifestError) as caught:
        load_dataset(path)
    assert _lines(caught) == [f"{path}: line 1.probes[0]: an inline probe needs at "
                              "least one expected string (or evidence lines) (got {'turn': 0})"]


def _experiment(root: Path, dataset: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "agent.yaml").write_text(
        "apiVersion: mas/v1\nkind: Agent\nmetadata: {name: reader}\nspec:\n"
        "  models: [{id: main, model: any, context_window: 8000, max_tokens: 256}]\n")
    path = root / "experiment.yaml"
    path.write_text("experiment:\n  name: bench\n  models: {main: offline/default}\n"
                    f"  applications: [{{manifest: ./agent.yaml}}]\n  dataset: {dataset}\n")
    return path


def test_an_experiment_names_the_format(runtime: Runtime, tmp_path: Path) -> None:
    path = _experiment(tmp_path, f"{{path: {LOCOMO}, format: locomo, limit: 1, questions: 3}}")
    experiment = load_lab_experiment(runtime, path)
    assert [i.id for i in experiment.items] == ["tiny-1"]
    assert len(experiment.items[0].probes) == 3
    other = load_lab_experiment(runtime, path, dataset=LOCOMO.with_name("locomo_tiny.json"))
    assert other.options["dataset"].endswith("locomo_tiny.json")


@pytest.mark.parametrize(("dataset", "expected"), [
    ("{path: ./x.json, format: csv}", "experiment.dataset.format: Input should be 'jsonl', "
     "'locomo' or 'longmemeval' (got 'csv')"),
    ("{path: ./x.json, limit: 0}", "experiment.dataset.limit: Input should be greater than or "
     "equal to 1 (got 0)"),
    ("{path: ./missing.json, format: locomo}",
     "experiment.dataset: file not found (got './missing.json')"),
])
def test_a_bad_dataset_field_is_one_line(runtime: Runtime, tmp_path: Path, dataset: str,
                                         expected: str) -> None:
    path = _experiment(tmp_path, dataset)
    with pytest.raises(ManifestError) as caught:
        load_lab_experiment(runtime, path)
    assert _lines(caught) == [f"{path}: {expected}"]


def test_the_dataset_option_reads_another_file(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from mas.library.lab.cli import lab_group
    from mas.runtime.cli import CliState

    path = _experiment(tmp_path, "{path: ./sample.json, format: locomo}")
    runner = CliRunner()
    monkeypatch.chdir(tmp_path)  # a short value: the one-line error shortens a long one
    missing = runner.invoke(lab_group, ["run", str(path), "--dataset", "no.json"],
                            obj=CliState(Runtime.create()))
    assert missing.exit_code == 2
    assert "<command line>: --dataset: file not found (got 'no.json')" in missing.output
    ran = runner.invoke(lab_group, ["run", str(path), "--dataset", str(LOCOMO), "--runs-dir",
                                    str(tmp_path / "runs")], obj=CliState(Runtime.create()))
    assert ran.exit_code == 0, ran.output
    assert ("dataset: 1 evidence id(s) in 1 question(s) name no line of their conversation: "
            "judged on the lines they name\n") in ran.output
    run = next((tmp_path / "runs" / "bench").iterdir())
    assert json.loads((run / "run.json").read_text())["options"]["dataset"] == str(LOCOMO)
