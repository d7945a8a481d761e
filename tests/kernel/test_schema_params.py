"""Issue 12, item 7: the JSON Schema publishes every registered type's params (third-party
plugins included), discriminated on ``type``, accepts the string binding form, and
``mas-ctl schema --all --out DIR`` writes one file per kind."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from mas.runtime import Runtime
from mas.runtime.cli.schema_cmd import SCHEMA_KINDS
from mas.runtime.paths import folder_name_problem
from mas.runtime.spec.manifests import Agent, Metadata
from mas.runtime.spec.schema import folded_pattern, kind_schema

ROOT = Path(__file__).resolve().parents[2]
HEAD = "apiVersion: mas/v1\nkind: Agent\nmetadata: {name: a}\n"
CM = HEAD + "spec: {context_manager: %s}\n"

# Bad manifests a schema can catch: each is also refused by `mas-ctl validate`.
BAD = {
    "unknown context manager type": CM % "{type: sumarising}",
    "unknown summarizer type": CM % "{type: summarising, params: {summarizer: lm}}",
    "unknown summarizer type in a mapping": CM % "{type: summarising, params: {summarizer: {type: lm}}}",
    "negative keep_turns": CM % "{type: summarising, params: {keep_turns: -1}}",
    "params given to drop": CM % "{type: summarising, params: {summarizer: {type: drop, params: {model: x}}}}",
    "unknown cm param": CM % "{type: summarising, params: {keep_turn: 3}}",
    "hysteresis a string": CM % "{type: summarising, params: {hysteresis_ratio: lots}}",
    "sliding_window param of summarising": CM % "{type: sliding_window, params: {summarizer: llm}}",
    "bad trigger kind": CM % "{type: summarising, params: {trigger: {type: soon, value: 1}}}",
    "token_ratio trigger over 1": CM % "{type: summarising, params: {trigger: {type: token_ratio, value: 5}}}",
    "negative remaining_tokens": CM % "{type: summarising, params: {trigger: {type: remaining_tokens, value: -5}}}",
    "safety margin of 1": CM % "{type: summarising, params: {trimmer: {safety_margin_ratio: 1}}}",
    "third-party params": CM % "{type: summarising, params: {summarizer: {type: first_words, params: {max_words: -1}}}}",
    "third-party unknown param": CM % "{type: summarising, params: {summarizer: {type: first_words, params: {words: 3}}}}",
    "shorthand on a type without model": CM % "{type: summarising, params: {summarizer: {type: drop, model: x}}}",
    "context_window over the bound": HEAD + "spec: {models: [{id: main, context_window: 1000000000}]}\n",
    "context_window a word": HEAD + "spec: {models: [{id: main, context_window: big}]}\n",
    "binding without type": CM % "{params: {keep_turns: 3}}",
}

GOOD = {
    "string binding form": CM % "summarising",
    "folded type": CM % "{type: Sliding-Window, params: {keep_turns: 2}}",
    "alias": CM % "{type: summarizing}",
    "triggers in range": CM % "{type: summarising, params: {trigger: {type: token_ratio, value: 1}}}",
    "remaining_tokens trigger": CM % "{type: summarising, params: {trigger: {type: remaining_tokens, value: 0}}}",
    "string summarizer": CM % "{type: summarising, params: {summarizer: drop}}",
    "type chosen by its plugin": CM % "{type: standard:summarising, params: {summarizer: Standard:Drop}}",
    "shorthand model": CM % "{type: summarising, params: {summarizer: {type: llm, model: gpt-4o-mini}}}",
    "third-party summarizer": CM % "{type: summarising, params: {summarizer: {type: first_words, params: {max_words: 5}}}}",
    "auto values": HEAD + "spec:\n  models: [{id: main, context_window: auto}]\n"
                   "  context_manager: {type: summarising, params: {trimmer: {max_tokens: Auto}}}\n",
}


@pytest.fixture(scope="module")
def agent_schema() -> dict[str, Any]:
    schema = kind_schema(Runtime.create(), Agent)
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def _valid(schema: dict[str, Any], text: str) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(yaml.safe_load(text))


@pytest.mark.parametrize("case", sorted(BAD))
def test_schema_params_reject_what_validate_rejects(case: str, agent_schema: dict[str, Any],
                                                    write: Callable[[str, str], Path],
                                                    mas_ctl: Callable[..., Any]) -> None:
    assert not _valid(agent_schema, BAD[case])
    assert mas_ctl("validate", write("a.yaml", BAD[case])).code == 2


@pytest.mark.parametrize("case", sorted(GOOD))
def test_schema_params_accept_what_validate_accepts(case: str, agent_schema: dict[str, Any],
                                                    write: Callable[[str, str], Path],
                                                    mas_ctl: Callable[..., Any]) -> None:
    assert _valid(agent_schema, GOOD[case])
    result = mas_ctl("validate", write("a.yaml", GOOD[case]))
    assert result.code == 0, result.err


def test_schema_params_are_discriminated_on_type(agent_schema: dict[str, Any]) -> None:
    binding = agent_schema["$defs"]["binding.context_manager"]
    branches = next(c["oneOf"] for c in binding["anyOf"] if "oneOf" in c)
    assert {b["title"] for b in branches} >= {"summarising", "sliding_window", "stack"}
    summarising = next(b for b in branches if b["title"] == "summarising")
    assert summarising["properties"]["params"] == {"$ref": "#/$defs/context_manager.summarising"}
    summarizers = agent_schema["$defs"]["binding.summarizer"]
    titles = {b["title"] for c in summarizers["anyOf"] if "oneOf" in c for b in c["oneOf"]}
    assert "first_words" in titles  # the test fixture distribution, a third party


def test_schema_params_accept_every_example_and_its_compile_output(
    agent_schema: dict[str, Any], mas_ctl: Callable[..., Any]
) -> None:
    for path in sorted(ROOT.glob("library-*/examples/**/*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "Agent":
                jsonschema.validate(doc, agent_schema, cls=jsonschema.Draft202012Validator)
                compiled = mas_ctl("compile", path)
                for out in yaml.safe_load_all(compiled.out):
                    jsonschema.validate(out, agent_schema, cls=jsonschema.Draft202012Validator)


def test_schema_params_of_experiment_steps(mas_ctl: Callable[..., Any], tmp_path: Path) -> None:
    schema = json.loads(mas_ctl("schema", "experiment").out)
    validator = jsonschema.Draft202012Validator(schema)
    ok = {"experiment": {"name": "x", "application": {"post": [
        {"type": "eval_mce", "config": {"prompt_metrics": [{"id": "B", "prompt": "p"}]}}]}}}
    assert validator.is_valid(ok)
    no_prompt = {"experiment": {"name": "x", "application": {"post": [
        {"type": "eval_mce", "config": {"prompt_metrics": [{"id": "B"}]}}]}}}
    unknown_step = {"experiment": {"name": "x", "application": {"post": [{"type": "evl_mce"}]}}}
    assert not validator.is_valid(no_prompt) and not validator.is_valid(unknown_step)
    for name in ("a/b", "..", ".hidden"):  # a flavour name becomes a folder name
        leaving = {"experiment": {"name": "x", "flavours": [{"name": name}]}}
        assert not validator.is_valid(leaving), name
    for path in sorted(ROOT.glob("library-*/examples/**/experiment.yaml")):
        validator.validate(yaml.safe_load(path.read_text()))


def test_schema_all_out_writes_one_file_per_kind(mas_ctl: Callable[..., Any],
                                                 tmp_path: Path) -> None:
    out = tmp_path / "schemas"
    result = mas_ctl("schema", "--all", "--out", out)
    assert result.code == 0, result.err
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(f"{k.lower()}.schema.yaml" for k in SCHEMA_KINDS)
    assert "agent.schema.yaml" in names and "experiment.schema.yaml" in names
    agent = yaml.safe_load((out / "agent.schema.yaml").read_text())
    jsonschema.Draft202012Validator.check_schema(agent)
    assert "binding.context_manager" in agent["$defs"]
    as_json = mas_ctl("schema", "--all", "--out", out, "--format", "json")
    assert as_json.code == 0 and (out / "agent.schema.json").is_file()


@pytest.mark.parametrize("args", [[], ["Agent", "--all", "--out", "x"], ["--all"]])
def test_schema_usage_errors_exit_2(args: list[str], mas_ctl: Callable[..., Any]) -> None:
    result = mas_ctl("schema", *args)
    assert result.code == 2 and "Traceback" not in result.err


def test_folded_pattern_matches_what_binding_folds() -> None:
    import re

    pattern = re.compile(folded_pattern(["sliding_window", "summarizing"]))
    for text in ("sliding_window", "Sliding-Window", " SLIDING_window ", "Summarizing"):
        assert pattern.match(text), text
    for text in ("slidingwindow", "sliding_windows", "summarising"):
        assert not pattern.match(text), text


@given(st.text(max_size=140))
@example("ok\n")
@example("a" * 128)
@example("a" * 129)
def test_folder_name_pattern_accepts_exactly_what_validate_accepts(name: str) -> None:
    # The schema's pattern restates mas.runtime.paths' rule for editors: the two must agree.
    schema = Metadata.model_json_schema()["properties"]["name"]
    assert jsonschema.Draft202012Validator(schema).is_valid(name) == \
        (folder_name_problem(name) == "")
