"""Bad input: every invalid manifest gets one line per problem, exit 2, no traceback.

Each case is a file (or files) and the lines ``mas-ctl validate`` must print, as
``(location, fragment of the message)`` pairs checked against ``file: location: message``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

HEAD = "apiVersion: mas/v1\nkind: Agent\nmetadata: {name: a}\n"

CASES: dict[str, tuple[str, list[tuple[str, str]]]] = {
    "empty file": ("", [("", "file is empty")]),
    "only comments": ("# nothing here\n", [("", "file is empty")]),
    "malformed yaml": (HEAD + "spec: {models: [\n", [("line ", "invalid YAML")]),
    "python tag": (HEAD + "spec: !!python/object/apply:os.system ['echo hi']\n", [("line ", "is not allowed")]),
    "duplicate key": (HEAD + "spec: {}\nspec: {}\n", [("line 5", "duplicate key 'spec'")]),
    "document is a list": ("- a\n- b\n", [("", "a document must be a mapping")]),
    "missing kind": ("apiVersion: mas/v1\nmetadata: {name: a}\n", [("kind", "Field required")]),
    "unknown kind": ("apiVersion: mas/v1\nkind: Robot\nmetadata: {name: a}\n", [("kind", "unknown kind")]),
    "wrong api version": ("apiVersion: mas/v2\nkind: Agent\nmetadata: {name: a}\n", [("apiVersion", "'mas/v1'")]),
    "missing metadata name": ("apiVersion: mas/v1\nkind: Agent\nmetadata: {}\n", [("metadata.name", "Field required")]),
    "unknown top-level spec key": (HEAD + "spec: {modles: []}\n", [("spec.modles", "unknown field (not allowed here); did you mean 'models'?")]),
    "models not a list": (HEAD + "spec: {models: gpt-4o}\n", [("spec.models", "valid list")]),
    "context_window a string": (HEAD + "spec: {models: [{id: main, context_window: big}]}\n", [("spec.models[0].context_window", "valid integer")]),
    "negative max_tokens": (HEAD + "spec: {models: [{id: main, max_tokens: -5}]}\n", [("spec.models[0].max_tokens", "greater than 0")]),
    "duplicate model id": (HEAD + "spec: {models: [{id: main, model: a}, {id: main, model: b}]}\n", [("spec.models", "duplicate spec.models[].id 'main'")]),
    "unknown key in model row": (HEAD + "spec: {models: [{id: main, modle: x}]}\n", [("spec.models[0].modle", "did you mean 'model'?")]),
    "unknown context manager type": (HEAD + "spec: {context_manager: {type: sumarising}}\n", [("spec.context_manager.type", "did you mean 'summarising'")]),
    "unknown summarizer type": (HEAD + "spec: {context_manager: {type: summarising, params: {summarizer: lm}}}\n", [("spec.context_manager.params.summarizer.type", "unknown summarizer type 'lm'")]),
    "negative keep_turns": (HEAD + "spec: {context_manager: {type: summarising, params: {keep_turns: -1}}}\n", [("spec.context_manager.params.keep_turns", "greater than or equal to 0")]),
    "params given to drop": (HEAD + "spec: {context_manager: {type: summarising, params: {summarizer: {type: drop, params: {model: x}}}}}\n", [("spec.context_manager.params.summarizer.params.model", "unknown field")]),
    "unknown cm param": (HEAD + "spec: {context_manager: {type: summarising, params: {keep_turn: 3}}}\n", [("spec.context_manager.params.keep_turn", "did you mean 'keep_turns'?")]),
    "binding without type": (HEAD + "spec: {context_manager: {params: {keep_turns: 3}}}\n", [("spec.context_manager.type", "Field required")]),
    "binding model twice": (HEAD + "spec: {context_manager: {type: summarising, params: {summarizer: {type: llm, model: a, params: {model: b}}}}}\n", [("spec.context_manager.params.summarizer", "'model' given both")]),
    "pruning ratio over 1": (HEAD + "spec: {context_manager: {type: summarising, params: {pruning: {soft_trim_ratio: 2}}}}\n", [("spec.context_manager.params.pruning.soft_trim_ratio", "less than or equal to 1")]),
    "hysteresis a string": (HEAD + "spec: {context_manager: {type: summarising, params: {hysteresis_ratio: lots}}}\n", [("spec.context_manager.params.hysteresis_ratio", "valid number")]),
    "compaction bad strategy": (HEAD + "spec: {working_memory: {compaction: {strategy: compress}}}\n", [("spec.working_memory.compaction.strategy", "'summarize' or 'drop'")]),
    "max_llm_calls zero": (HEAD + "spec: {budget: {max_llm_calls: 0}}\n", [("spec.budget.max_llm_calls", "greater than or equal to 1")]),
    "pin_activated not bool": (HEAD + "spec: {context_sources: {pin_activated: sometimes}}\n", [("spec.context_sources.pin_activated", "valid boolean")]),
    "infra negative window": ("apiVersion: mas/v1\nkind: Infra\nmetadata: {name: i}\nspec: {generation: {context_window: -1}}\n", [("spec.generation.context_window", "greater than 0")]),
    "infra pricing missing rate": ("apiVersion: mas/v1\nkind: Infra\nmetadata: {name: i}\nspec: {generation: {pricing: {input_per_million_tokens: 1}}}\n", [("spec.generation.pricing.output_per_million_tokens", "Field required")]),
    "overlay targeting missing kind": (HEAD + "spec: {}\n---\napiVersion: mas/v1\nkind: Overlay\nmetadata: {name: o}\nspec: {target: {kind: MAS}, patch: {models: []}}\n", [("spec.target", "targets kind MAS, but no such document was loaded")]),
    "overlay targeting missing name": (HEAD + "spec: {}\n---\napiVersion: mas/v1\nkind: Overlay\nmetadata: {name: o}\nspec: {target: {kind: Agent, name: b}, patch: {instructions: x}}\n", [("spec.target", "named 'b'")]),
    "overlay with empty patch": ("apiVersion: mas/v1\nkind: Overlay\nmetadata: {name: o}\nspec: {target: {kind: Agent}, patch: {}}\n", [("spec", "patch is empty")]),
    "overlay patch makes agent invalid": (HEAD + "spec: {}\n---\napiVersion: mas/v1\nkind: Overlay\nmetadata: {name: o}\nspec: {target: {kind: Agent}, patch: {budget: {max_llm_calls: -3}}}\n", [("spec.budget.max_llm_calls", "greater than or equal to 1")]),
    "experiment key misspelt": ("experiment: {name: x, flavors: []}\n", [("experiment.flavors", "did you mean 'flavours'?")]),
    "unknown key far from every field": (HEAD + "spec: {zzz: 1}\n", [("spec.zzz", "unknown field (not allowed here) (got 1)")]),
    "experiment without name": ("experiment: {models: {main: gpt-4o}}\n", [("experiment.name", "Field required")]),
    "experiment model disagrees": ("experiment: {name: x, model: a, models: {main: b}}\n", [("experiment", "disagrees with models.main")]),
    "experiment missing application": ("experiment: {name: x, applications: [{manifest: nowhere.yaml}]}\n", [("experiment.applications[0].manifest", "file not found")]),
    "experiment duplicate step names": ("experiment: {name: x, application: {post: [{type: eval_mce}, {type: eval_mce}]}}\n", [("experiment.application.post", "two steps are named 'eval_mce'")]),
    "mas agent file missing": ("apiVersion: mas/v1\nkind: MAS\nmetadata: {name: m}\nspec: {agents: [{name: w, manifest: w.yaml}]}\n", [("spec.agents[0].manifest", "file not found")]),
    "bad field and unknown type together": (HEAD + "spec: {models: [{id: main, max_tokens: -1}], context_manager: {type: sumarising}}\n", [("spec.models[0].max_tokens", "greater than 0"), ("spec.context_manager.type", "did you mean")]),
    "bad field and bad cm params together": (HEAD + "spec: {budget: {max_llm_calls: 0}, context_manager: {type: summarising, params: {keep_turns: -2}}}\n", [("spec.budget.max_llm_calls", "greater than or equal to 1"), ("spec.context_manager.params.keep_turns", "greater than or equal to 0")]),
    "two problems in one file": (HEAD + "spec: {models: [{id: main, max_tokens: 0}], budget: {max_llm_calls: 0}}\n", [("spec.models[0].max_tokens", "greater than 0"), ("spec.budget.max_llm_calls", "greater than or equal to 1")]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_manifest_prints_one_line_per_problem(
    case: str, write: Callable[[str, str], Path], mas_ctl: Callable[..., object]
) -> None:
    text, expected = CASES[case]
    path = write("bad.yaml", text)
    path.write_text(text)  # undedented: exact bytes matter for YAML errors
    result = mas_ctl("validate", path)
    assert result.code == 2, result.err  # type: ignore[attr-defined]
    assert result.out == ""  # type: ignore[attr-defined]
    lines = result.err.strip().splitlines()  # type: ignore[attr-defined]
    assert "Traceback" not in result.err  # type: ignore[attr-defined]
    assert len(lines) == len(expected), lines
    for line, (location, fragment) in zip(lines, expected, strict=True):
        assert line.startswith(str(path)), line
        assert f": {location}" in line, line
        assert fragment in line, line


def test_verbose_shows_the_traceback(write: Callable[[str, str], Path], mas_ctl: Callable[..., object]) -> None:
    path = write("bad.yaml", HEAD + "spec: {budget: {max_llm_calls: 0}}\n")
    result = mas_ctl("-v", "validate", path)
    assert result.code == 2  # type: ignore[attr-defined]
    assert "Traceback" in result.err  # type: ignore[attr-defined]


def test_offending_value_is_shown(write: Callable[[str, str], Path], mas_ctl: Callable[..., object]) -> None:
    path = write("bad.yaml", HEAD + "spec: {context_manager: {type: summarising, params: {keep_turns: -1}}}\n")
    result = mas_ctl("validate", path)
    assert result.err.strip() == (  # type: ignore[attr-defined]
        f"{path}: spec.context_manager.params.keep_turns: "
        "Input should be greater than or equal to 0 (got -1)"
    )


def test_summarizer_model_matching_no_slot_is_not_an_error(
    write: Callable[[str, str], Path], mas_ctl: Callable[..., object]
) -> None:
    """Spec 000: anything else is sent as a LiteLLM id (source=override)."""
    path = write("ok.yaml", HEAD + "spec: {context_manager: {type: summarising, params: {summarizer: {type: llm, model: some-provider/some-model}}}}\n")
    result = mas_ctl("validate", path)
    assert result.code == 0, result.err  # type: ignore[attr-defined]
