"""The context-ablation dataset, its generator, and the dataset loader's bad-input errors."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from mas.library.lab.dataset import Turn, load_dataset
from mas.runtime.errors import ManifestError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "library-lab" / "examples" / "context-ablation"


def _generator():
    spec = importlib.util.spec_from_file_location("generate_dataset", EXAMPLE / "generate_dataset.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def test_the_shipped_dataset_is_what_the_generator_writes() -> None:
    generator = _generator()
    lines = [json.dumps(item, ensure_ascii=False, sort_keys=True) for item in generator.generate()]
    assert (EXAMPLE / "dataset.jsonl").read_text(encoding="utf-8") == "\n".join(lines) + "\n"
    assert generator.generate(7) != generator.generate()  # the seed matters


def test_the_dataset_stresses_context_management() -> None:
    dataset = load_dataset(EXAMPLE / "dataset.jsonl")
    assert len(dataset.items) >= 12
    for item in dataset.items:
        assert 30 <= len(item.turns) <= 140
        first, last = item.turn(0).user, item.turn(len(item.turns) - 1).user
        # The key fact is planted in the first turn and asked for in the last one.
        assert all(fact in first for fact in item.expected_facts)
        assert last.endswith("?") and not any(fact in last for fact in item.expected_facts)
        asked = re.search(r"[A-Z]+-\d+", last)
        assert asked and asked.group(0) in first  # asked for by the id planted first
        tool_turns = [item.turn(i) for i in range(len(item.turns)) if item.turn(i).tool_results]
        assert tool_turns and max(len(v) for t in tool_turns for v in t.tool_results.values()) > 1500
        for turn in tool_turns:  # the offline model's convention: one CALL line per result
            for name in turn.tool_results:
                assert re.search(rf"^CALL {name} \{{", turn.user, re.MULTILINE)
        assert any("CALL activate_skill" in item.turn(i).user for i in range(len(item.turns)))
        kinds = {probe.kind for probe in item.probes}
        assert kinds == {"planted", "tool_output", "skill"}
        for probe in item.probes:
            assert item.turn(probe.turn).user.endswith("?")


def test_the_long_items_hold_several_windows_of_history() -> None:
    from mas.runtime.context.estimate import DEFAULT_ESTIMATOR

    dataset = load_dataset(EXAMPLE / "dataset.jsonl")
    long = [item for item in dataset.items if item.id.endswith("-long")]
    assert len(long) == 3
    for item in long:
        scripted = []
        for i in range(len(item.turns)):
            turn = item.turn(i)
            scripted.append({"role": "user", "content": turn.user})
            scripted += [{"role": "tool", "content": str(v)} for v in turn.tool_results.values()]
        # The scripted input alone is at least twice the agent's 32k window (the replies add
        # more), so no strategy can send the whole history.
        assert DEFAULT_ESTIMATOR.messages(scripted) > 2 * 32_000, item.id


def test_skill_probes_name_facts_of_shipped_skills() -> None:
    dataset = load_dataset(EXAMPLE / "dataset.jsonl")
    bodies = " ".join(p.read_text() for p in (EXAMPLE / "skills").glob("*/SKILL.md"))
    for item in dataset.items:
        for probe in item.probes:
            if probe.kind == "skill":
                assert all(e in bodies for e in probe.expected)


def _write(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_bad_lines_are_all_reported_with_their_line_numbers(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        '{"id": "a", "turns": ["hi"]}',
        "not json",
        '{"id": "b"}',
        '{"id": "a", "turns": ["again"]}',
        '[1, 2]',
        '{"id": "c", "turns": ["x"], "probes": [{"turn": 5, "expected": ["y"]}]}',
        '{"id": "d/e", "turns": ["x"]}',
    )
    with pytest.raises(ManifestError) as caught:
        load_dataset(path)
    text = str(caught.value)
    assert "line 2: not valid JSON" in text
    assert "line 3.turns: Field required" in text
    assert "line 4.id: duplicate id (first on line 1)" in text
    assert "line 5: an item must be a JSON object" in text
    assert "line 6.probes[0].turn: no such turn (the item has 1) (got 5)" in text
    assert "line 7.id" in text and "folder name" in text


def test_a_turn_object_needs_a_user_message(tmp_path: Path) -> None:
    path = _write(tmp_path, '{"id": "a", "turns": [{"tool_results": {"t": "r"}}]}')
    with pytest.raises(ManifestError, match=r"line 1\.turns\[0\]"):
        load_dataset(path)


def test_a_wrong_turn_is_one_problem_about_the_shape_it_meant(tmp_path: Path) -> None:
    # A turn is a string or a Turn: an object's mistake is reported for the object alone,
    # a value of neither shape gets one line naming both, and no location names a branch.
    path = _write(
        tmp_path,
        '{"id": "a", "turns": ["hi", {"user": "x", "tool_result": {}}]}',
        '{"id": "b", "turns": [3]}',
        '{"id": "c", "turns": ["q"], "probes": [{"turn": 1, "question": ["q"]}]}',
    )
    with pytest.raises(ManifestError) as caught:
        load_dataset(path)
    lines = str(caught.value).splitlines()
    assert lines == [
        f"{path}: line 1.turns[1].tool_result: unknown field (not allowed here); did you mean "
        "'tool_results'? (got {})",
        f'{path}: line 2.turns[0]: a turn is a string or an object {{"user": ..., '
        '"tool_results": {...}} (got 3)',
        f'{path}: line 3.probes[0].question: a turn is a string or an object '
        '{"user": ..., "tool_results": {...}} (got [\'q\'])',
    ]


def test_a_blank_turn_is_refused_in_either_shape(tmp_path: Path) -> None:
    # As mas-ctl run refuses one: an empty user message is a slip in the file, not a turn.
    path = _write(tmp_path, '{"id": "a", "turns": ["", {"user": " "}, "ok"]}',
                  '{"id": "b", "turns": ["x"], "probes": [{"turn": 1, "question": "\\n"}]}')
    with pytest.raises(ManifestError) as caught:
        load_dataset(path)
    assert str(caught.value).splitlines() == [
        f"{path}: line 1.turns[0]: must not be blank (got '')",
        f"{path}: line 1.turns[1].user: must not be blank (got ' ')",
        f"{path}: line 2.probes[0].question: must not be blank (got '\\n')",
    ]


def test_a_byte_order_mark_is_not_part_of_the_first_item(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"id": "a", "turns": ["hi"]}\n{"id": "b", "turns": ["x"]}\n')
    assert [i.id for i in load_dataset(path).items] == ["a", "b"]


def test_a_misspelt_field_is_refused_not_kept(tmp_path: Path) -> None:
    # Kept in item.json like any extra key, it would score as no facts or no probes.
    path = _write(tmp_path, '{"id": "a", "turns": ["hi"], "expected_fact": ["X"], "note": "kept"}',
                  '{"id": "b", "turn": ["hi"]}',
                  '{"id": "c", "turns": ["x"], "probe": [{"turn": 0, "expected": ["x"]}]}')
    with pytest.raises(ManifestError) as caught:
        load_dataset(path)
    tail = "? (other keys are kept in item.json)"
    assert str(caught.value).splitlines() == [
        f"{path}: line 1.expected_fact: not a field of an item: did you mean 'expected_facts'{tail}",
        f"{path}: line 2.turn: not a field of an item: did you mean 'turns'{tail}",
        f"{path}: line 3.probe: not a field of an item: did you mean 'probes'{tail}",
    ]


def test_a_key_holding_a_fields_whole_name_is_a_kept_extra(tmp_path: Path) -> None:
    # Close to a field by spelling, but deliberate: refusing them would leave no way to keep them.
    path = _write(tmp_path, '{"id": "a", "turns": ["hi"], "probes_v2": [1], "ids": [2]}')
    item = load_dataset(path).items[0]
    assert item.record()["probes_v2"] == [1] and item.record()["ids"] == [2]


def test_empty_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="the dataset has no item"):
        load_dataset(_write(tmp_path, ""))
    with pytest.raises(ManifestError, match="cannot read dataset"):
        load_dataset(tmp_path / "missing.jsonl")


def test_string_turns_and_object_turns_read_alike(tmp_path: Path) -> None:
    path = _write(tmp_path, json.dumps({"id": "a", "turns": ["plain", {"user": "CALL t {}",
                                                                        "tool_results": {"t": ["r1", "r2"]}}],
                                        "note": "extra fields are kept"}))
    item = load_dataset(path).items[0]
    assert item.turn(0) == Turn(user="plain")
    assert item.tool_names() == ["t"]
    assert item.record()["note"] == "extra fields are kept"
