"""Issue 26 item 9: a key is masked in every form it takes and on every stream.

A reply that quotes the key reaches stdout (the turn line, the context view); a key with a
``"`` or ``\\`` in it is written JSON-escaped into transcript.json and session.json, where
the raw value is not found. The provider is the scripted OpenAI server on 127.0.0.1.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mas.runtime.secrets import MASK, MIN_LENGTH, key_forms, mask

KEY = 'sk-"quoted\\back-7d41c0ffee'
"""A key holding both characters JSON escapes."""


def _forms(key: str) -> list[str]:
    """The key as written raw, by JSON (ASCII or not, once or inside a JSON string) and by
    ``repr`` (either quoting)."""
    once = [json.dumps(key)[1:-1], json.dumps(key, ensure_ascii=False)[1:-1]]
    return [key, *once, *(json.dumps(form)[1:-1] for form in once), repr(key)[1:-1],
            repr(key + "'\"")[1:-4]]


def _leaks(texts: list[str], key: str) -> list[str]:
    return [text[:200] for text in texts for form in _forms(key) if form in text]


def test_hostile2_item09_a_quoted_key_reaches_neither_stdout_nor_the_run_folder(
    tmp_path: Path, mas_ctl: Callable[..., Any], fake_openai: Any,
    fake_openai_agent: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    fake_openai.ok(f"your key is {KEY}, keep it")
    agent, infra = fake_openai_agent
    turns = tmp_path / "turns.jsonl"
    turns.write_text(json.dumps("what is my key?") + "\n")
    out = tmp_path / "run"
    run = mas_ctl("run", agent, "--infra", infra, "--input", turns, "--out", out)
    assert run.code == 0, run.err
    assert f"your key is {MASK}, keep it" in run.out
    stored = {p.name: p.read_text(errors="replace") for p in out.rglob("*") if p.is_file()}
    assert {"transcript.json", "session.json"} <= set(stored)
    assert MASK in stored["transcript.json"]
    assert _leaks([run.out, run.err, *stored.values()], KEY) == []


def test_hostile2_item09_every_json_form_of_a_key_is_masked() -> None:
    record = {"reply": f"a {KEY} b", "nested": json.dumps({"reply": KEY})}
    text = json.dumps(record) + repr(record) + json.dumps(record, ensure_ascii=False)
    assert _leaks([mask(text, [KEY])], KEY) == []
    assert json.loads(mask(json.dumps(record), [KEY]))["reply"] == f"a {MASK} b"


def test_hostile2_item09_key_forms_are_the_written_forms() -> None:
    forms = key_forms(KEY)
    assert set(_forms(KEY)) == set(forms)
    assert [len(f) for f in forms] == sorted((len(f) for f in forms), reverse=True)


KEY_CHARS = st.sampled_from(list("ab7-/\u00e9\"'\\\n\t"))
"""Letters, and every character JSON or ``repr`` writes differently."""


@given(key=st.text(alphabet=KEY_CHARS, min_size=MIN_LENGTH, max_size=30),
       before=st.text(alphabet="xy '\"", max_size=5), after=st.text(alphabet="xy ", max_size=5))
def test_hostile2_item09_no_key_survives_json_or_repr(key: str, before: str, after: str) -> None:
    value = f"{before}{key}{after}"
    for written in (json.dumps({"v": value}), json.dumps([value], ensure_ascii=False),
                    json.dumps({"line": json.dumps({"v": value})}), repr({"v": value})):
        masked = mask(written, [key])
        assert _leaks([masked], key) == [], (key, written, masked)
