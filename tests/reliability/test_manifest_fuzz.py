"""Manifest fuzzing: ≥ 1,000 generated YAML documents through ``mas-ctl validate``.

Documents mix plausible manifest shapes (right keys, wrong values), random structures,
and raw text that is not YAML at all or carries tags. Whatever comes in, validate exits 0
or 2, never prints a traceback, and every error line has the one-line
``file: path: message`` form (tests/kernel/test_bad_manifests.py pins the exact messages).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

EXAMPLES = max(1_000, settings().max_examples)

KEYS = ["apiVersion", "kind", "metadata", "name", "spec", "models", "id", "model",
        "context_window", "max_tokens", "context_manager", "type", "params", "keep_turns",
        "summarizer", "budget", "max_llm_calls", "instructions", "trimmer", "hysteresis_ratio",
        "context_sources", "pin_activated", "generation", "api_key_env", "target", "patch",
        "experiment", "applications", "manifest", "agents", "pruning", "trigger", "value"]
KINDS = ["Agent", "MAS", "Infra", "Overlay", "Robot", "", None]
TYPES = ["summarising", "sliding_window", "stack", "llm", "drop", "nope", "Summarising"]

# Any character, control characters and line breaks included: the error stays one line.
plain = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
keys = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-10**12, 10**12),
    st.floats(allow_nan=True, allow_infinity=True), plain,
    st.sampled_from(TYPES), st.sampled_from(["auto", "any", "mas/v1", "limit", "-1", "1e9"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.sampled_from(KEYS) | keys,
                                            inner, max_size=5)),
    max_leaves=20,
)


@st.composite
def manifests(draw: Any) -> str:
    shape = draw(st.sampled_from(["plausible", "plausible", "random", "raw", "multi"]))
    if shape == "raw":
        return draw(st.one_of(
            st.text(st.characters(blacklist_categories=("Cs",)), max_size=200),
            st.sampled_from([
                "!!python/object/apply:os.system ['echo pwned']\n",
                "spec: !!python/object/new:os.system [echo pwned]\n",
                "x: !!python/name:os.system\n", "a: !custom 1\n", "a: [1, 2\n",
                "\t- tab\n", "key: value\nkey: again\n", "---\n---\n", "&a [*a]\n",
                "a: *missing\n", "% bad directive\n", "\x00\x01\x1f", 'a: {"\\r": 1}\n',
            ])))
    if shape == "random":
        return yaml.safe_dump(draw(values), allow_unicode=True)
    doc: dict[str, Any] = {
        "apiVersion": draw(st.sampled_from(["mas/v1", "mas/v1", "v2", 1])),
        "kind": draw(st.sampled_from(KINDS)),
        "metadata": draw(st.one_of(st.fixed_dictionaries({"name": plain}),
                                   values)),
        "spec": draw(st.dictionaries(st.sampled_from(KEYS), values, max_size=5)),
    }
    if draw(st.booleans()):
        doc["spec"]["context_manager"] = {
            "type": draw(st.sampled_from(TYPES)),
            "params": draw(st.dictionaries(st.sampled_from(KEYS), values, max_size=4)),
        }
    if draw(st.booleans()):
        doc["spec"]["models"] = draw(st.lists(st.dictionaries(
            st.sampled_from(["id", "model", "context_window", "max_tokens", "extra"]), scalars,
            max_size=4), max_size=3))
    for key in draw(st.lists(st.sampled_from(list(doc)), max_size=2)):
        doc.pop(key, None)
    text = yaml.safe_dump(doc, allow_unicode=True)
    if shape == "multi":
        text += "---\n" + yaml.safe_dump(draw(values), allow_unicode=True)
    return text


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                        HealthCheck.too_slow])
@given(text=manifests())
def test_validate_never_crashes_and_speaks_one_line_per_problem(
    text: str, tmp_path: Path, mas_ctl: Callable[..., Any]
) -> None:
    path = tmp_path / "fuzz.yaml"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    result = mas_ctl("validate", path)
    assert result.code in (0, 2), (result.code, result.err)
    assert "Traceback" not in result.err and "Traceback" not in result.out
    if result.code == 2:
        lines = result.err.strip().splitlines()
        assert lines, "an error exit must say why"
        for line in lines:  # "file: path: message" or "file (document N): ..."
            assert line.startswith((f"{path}:", f"{path} (document ")), line
    assert "pwned" not in result.out

