"""The judge chain through our scope builder: each of spec 000's steps, and the example."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mas.library.eval import EvalConfig, eval_steps, judge_scope, load_experiment
from mas.runtime import Runtime
from mas.runtime.errors import ManifestError
from mas.runtime.spec.experiment import ExperimentBody
from mas.runtime.spec.loader import LoadedAgent, ManifestSet
from mas.runtime.spec.manifests import Agent
from mas.runtime.spec.model_ref import ModelResolutionError, resolve_model

EXAMPLE = Path(__file__).parents[2] / "library-eval/examples/mce/judge-override/experiment.yaml"

FULL: dict[str, Any] = {
    "name": "x",
    "models": {"judge": "m-judge", "main": "m-main"},
    "evaluation": {"model": "m-eval", "config": {"model": "m-eval-config"}},
    "vars": {"eval_model": "m-var-eval", "judge_model": "m-var-judge"},
    "metadata": {"model_name": "m-legacy"},
}
# Each row removes one more field, so the next step of the chain wins.
STEPS = [
    ({}, "m-step", "eval_mce.config.model"),
    ({"model": None}, "m-step-alias", "eval_mce.config.judge_model"),
    ({"judge_model": None}, "m-eval", "experiment.evaluation.model"),
    ({"evaluation.model": "any"}, "m-eval-config", "experiment.evaluation.config.model"),
    ({"evaluation.config": None}, "m-var-eval", "template_vars.eval_model"),
    ({"vars.eval_model": None}, "m-var-judge", "template_vars.judge_model"),
    ({"vars.judge_model": None}, "m-judge", "experiment.models.judge"),
    ({"models.judge": "any"}, "m-main", "experiment.models.main"),
    ({"models.main": None, "scalar": "m-scalar"}, "m-scalar", "experiment.model"),
    ({"scalar": None}, "m-app", "application.spec.models"),
    ({"apps": None}, "m-legacy", "experiment.metadata.model_name"),
    ({"metadata": None}, "m-local", "defaults.model"),
    ({"config_default": None}, "offline/default", "package.defaults.model"),
]


def _scope(removed: dict[str, Any]) -> Any:
    body = {k: (dict(v) if isinstance(v, dict) else v) for k, v in FULL.items()}
    body["evaluation"] = {"model": "m-eval", "config": {"model": "m-eval-config"}}
    step = {"model": "m-step", "judge_model": "m-step-alias"}
    apps, local = ["m-app", "m-app"], "m-local"
    for key, value in removed.items():
        if key in step:
            step[key] = value
        elif key == "scalar":
            body["model"] = value
        elif key == "apps":
            apps = []
        elif key == "config_default":
            local = None
        elif key == "evaluation.config":
            body["evaluation"]["config"] = {}
        elif "." in key:
            outer, inner = key.split(".")
            if value is None:
                body[outer].pop(inner)
            else:
                body[outer][inner] = value
        elif value is None:
            body.pop(key, None)
        else:
            body[key] = value
    return judge_scope(EvalConfig(**step), _applications(*apps),
                       experiment=ExperimentBody.model_validate(body), config_default=local)


def _applications(*models: str) -> ManifestSet:
    """Loaded applications: one agent per model, each with a ``main`` row naming it."""
    agents = [
        LoadedAgent(Agent.model_validate({
            "apiVersion": "mas/v1", "kind": "Agent", "metadata": {"name": f"a{i}"},
            "spec": {"models": [{"id": "main", "model": model}]},
        }), Path(f"a{i}.yaml"), f"a{i}.yaml")
        for i, model in enumerate(models)
    ]
    return ManifestSet(agents=agents)


@pytest.mark.parametrize("upto", range(len(STEPS)), ids=[s[2] for s in STEPS])
def test_each_resolution_step(upto: int) -> None:
    removed: dict[str, Any] = {}
    for change, _, _ in STEPS[: upto + 1]:
        removed.update(change)
    choice = resolve_model(Runtime.create(entry_points=False), "", "judge", _scope(removed))
    assert (choice.model, choice.source) == STEPS[upto][1:]


def test_application_models_must_be_unique() -> None:
    scope = judge_scope(EvalConfig(), _applications("gpt-4o", "gpt-4o-mini"),
                        config_default="local")
    choice = resolve_model(Runtime.create(entry_points=False), "", "judge", scope)
    assert (choice.model, choice.source) == ("local", "defaults.model")


def test_nothing_resolvable_is_a_clear_error() -> None:
    scope = judge_scope(EvalConfig(model="any"))
    scope = type(scope)(**{**scope.__dict__, "package_default": None})
    with pytest.raises(ModelResolutionError, match="no concrete judge model"):
        resolve_model(Runtime.create(entry_points=False), "", "judge", scope)


def test_example_resolves_per_step() -> None:
    manifests = load_experiment(EXAMPLE)
    runtime = Runtime.create()
    steps = eval_steps(manifests)
    resolved = {
        name: resolve_model(runtime, "", "judge", judge_scope(config, manifests))
        for name, config in steps.items()
    }
    assert {n: (c.model, c.source) for n, c in resolved.items()} == {
        "eval_mce": ("gpt-4o-mini", "experiment.models.judge"),
        "eval_mce_strict": ("gpt-4o", "eval_mce.config.model"),
    }
    assert [p.id for p in steps["eval_mce_strict"].prompt_metrics] == ["CitesOrderId"]


def test_example_evaluation_override_wins_over_models_judge(tmp_path: Path) -> None:
    text = EXAMPLE.read_text().replace("# model: gpt-4o ", "model: gpt-4.1 ")
    (tmp_path / "experiment.yaml").write_text(text)
    (tmp_path / "mas.yaml").write_text((EXAMPLE.parent / "mas.yaml").read_text())
    manifests = load_experiment(tmp_path / "experiment.yaml")
    config = eval_steps(manifests)["eval_mce"]
    choice = resolve_model(Runtime.create(), "", "judge", judge_scope(config, manifests))
    assert (choice.model, choice.source) == ("gpt-4.1", "experiment.evaluation.model")


def test_bad_step_config_is_located(tmp_path: Path) -> None:
    (tmp_path / "e.yaml").write_text(
        "experiment:\n  name: x\n  application:\n    post:\n"
        "      - type: eval_mce\n        config: {samples: 0, modle: gpt-4o}\n")
    with pytest.raises(ManifestError) as info:
        eval_steps(load_experiment(tmp_path / "e.yaml"))
    lines = str(info.value).splitlines()
    assert any("experiment.application.post[0].config.samples:" in line for line in lines)
    assert any("post[0].config.modle: unknown field" in line for line in lines)
