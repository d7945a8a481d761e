"""Issue 13 item 4: every key the process can see is masked in every stored or printed
text, not only the one named by ``api_key_env``; a short key never mangles text.

The provider is the scripted OpenAI server on 127.0.0.1, answering 401 with a body that
quotes the key, as real providers do.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mas.runtime.secrets import MASK, install_log_masking, mask, secret_values

KEY = "sk-proj-ENVONLY-7d41c0ffee99aa"


def _texts(root: Path) -> list[str]:
    return [p.read_text(errors="replace") for p in root.rglob("*")
            if p.is_file() and p.suffix != ".yaml"]


def test_item04_provider_env_key_never_reaches_files_or_output(
    tmp_path: Path, mas_ctl: Callable[..., Any], fake_openai: Any,
    fake_openai_agent: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)  # read by LiteLLM itself, no api_key_env
    caplog.set_level("DEBUG")
    fake_openai.fail(401, message=f"Incorrect API key provided: {KEY}")
    fake_openai.fail(401, message=f"Incorrect API key provided: {KEY}")
    agent, infra = fake_openai_agent
    turns = tmp_path / "turns.jsonl"
    turns.write_text(json.dumps("hello") + "\n")
    run = mas_ctl("run", agent, "--infra", infra, "--input", turns, "--out", tmp_path / "run")
    verbose = mas_ctl("-v", "run", agent, "--infra", infra, "--input", turns, "--out",
                      tmp_path / "run2")
    assert [h["authorization"] for h in fake_openai.headers] == [f"Bearer {KEY}"] * 2
    assert run.code == 4 and "authentication failed" in run.err, run.err
    texts = [run.out, run.err, verbose.out, verbose.err, caplog.text, *_texts(tmp_path)]
    assert len(texts) > 6
    assert [t[:200] for t in texts if KEY in t] == []
    assert MASK in run.err


def test_item04_log_records_are_masked(monkeypatch: pytest.MonkeyPatch,
                                       caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    install_log_masking()
    caplog.set_level("INFO")
    logging.getLogger("mas.test").warning("provider said %s", f"bad key {KEY}")
    assert KEY not in caplog.text and f"bad key {MASK}" in caplog.text


def test_item04_every_credential_variable_is_a_secret() -> None:
    env = {"OPENAI_API_KEY": "a" * 20, "AWS_SECRET_ACCESS_KEY": "b" * 20, "HF_TOKEN": "c" * 20,
           "WATSONX_APIKEY": "d" * 20, "HOME": "/root/e" * 3, "PATH": "/usr/bin:/bin"}
    assert sorted(secret_values(env)) == ["a" * 20, "b" * 20, "c" * 20, "d" * 20]


def test_item04_a_short_key_masks_only_whole_words() -> None:
    assert mask("key abcd, not abcdef or xabcd", ["abcd"]) == "key ***, not abcdef or xabcd"
    assert mask("a b c", ["a"]) == "a b c"  # too short to be a key: left alone


words = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=60)


@given(words, st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=8,
                      max_size=40))
def test_item04_long_keys_never_survive_and_other_text_is_untouched(text: str, key: str) -> None:
    combined = f"{text}{key}{text}"
    assert key not in mask(combined, [key])
    if key not in text and MASK not in text and not any(c in key for c in "*"):
        assert mask(text, [key]) == text
