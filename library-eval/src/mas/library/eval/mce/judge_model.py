"""Building the judge chain's scope (spec 000, "Resolution order") from what was loaded.

The chain itself lives in the kernel (``mas.runtime.spec.model_ref``); this module only
collects its fields: the step config, the experiment's evaluation block, template vars,
slot map and metadata, the applications' ``spec.models[]`` and the local config.yaml.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pydantic import ValidationError

from mas.library.eval.mce.config import EvalConfig
from mas.runtime.errors import ManifestError, Problem
from mas.runtime.registry import fold_type_name
from mas.runtime.spec.experiment import ExperimentBody
from mas.runtime.spec.loader import ManifestSet, load_manifest_set
from mas.runtime.spec.model_ref import JudgeScope, concrete
from mas.runtime.spec.problems import problems_from_validation

EVAL_MCE = "eval_mce"
"""The lab step type whose ``config`` is an :class:`EvalConfig`."""


def application_models(manifests: ManifestSet) -> list[str]:
    """Concrete model strings written in every loaded Agent's and MAS's ``spec.models[]``.

    Only what the manifests say: a row on ``any`` inherits and adds nothing, and a turn
    model resolved from the experiment or config.yaml is not an application model (it
    would shadow steps 8 and 9 under a false label).
    """
    rows = [row for loaded in manifests.agents for row in loaded.agent.spec.models]
    rows += [row for mas in manifests.mases for row in mas.spec.models]
    return [model for model in (concrete(row.model) for row in rows) if model is not None]


def judge_scope(
    config: EvalConfig,
    manifests: ManifestSet | None = None,
    *,
    experiment: ExperimentBody | None = None,
    config_default: str | None = None,
    template_vars: Mapping[str, str] | None = None,
) -> JudgeScope:
    """Every field of the judge chain for one scoring pass.

    :param config: the step config (``model`` / ``judge_model``).
    :param manifests: a loaded experiment with its applications and local config; its
        fields fill the chain unless given explicitly below.
    :param experiment: the ``experiment:`` body (default: the one in ``manifests``).
    :param config_default: ``defaults.model`` (default: the loaded config.yaml's).
    :param template_vars: pipeline template vars on top of ``experiment.vars``.
    """
    if experiment is None and manifests is not None and manifests.experiment is not None:
        experiment = manifests.experiment.experiment
    if config_default is None and manifests is not None:
        config_default = manifests.config.defaults.model
    variables = dict(experiment.vars) if experiment else {}
    variables.update(template_vars or {})
    found = application_models(manifests) if manifests else []
    name = (experiment.metadata if experiment else {}).get("model_name")
    return JudgeScope(
        step_model=config.model,
        step_judge_model=config.judge_model,
        evaluation_model=experiment.evaluation.model if experiment else None,
        evaluation_config_model=experiment.evaluation.config.model if experiment else None,
        template_vars=variables,
        experiment_models=dict(experiment.models) if experiment else {},
        experiment_model=experiment.model if experiment else None,
        application_models=tuple(found),
        metadata_model_name=name if isinstance(name, str) else None,
        config_default=config_default,
    )


def load_experiment(path: Path | str, *, config: Path | None = None) -> ManifestSet:
    """Load an experiment file with its applications and the local config.yaml.

    :raises ManifestError: the file (or an application) is invalid, or is not an experiment.
    """
    manifests = load_manifest_set([Path(path)], config=config)
    if manifests.experiment is None:
        raise ManifestError([Problem(str(path), "", "not an experiment file (no top-level "
                                     "'experiment:' key)")])
    return manifests


def eval_steps(manifests: ManifestSet) -> dict[str, EvalConfig]:
    """The experiment's ``eval_mce`` steps by step name, each config validated.

    :raises ManifestError: a step config that is not a valid :class:`EvalConfig`, located
        at ``experiment.application.post[i].config``.
    """
    if manifests.experiment is None:
        return {}
    source = str(manifests.experiment_path or "<experiment>")
    steps: dict[str, EvalConfig] = {}
    problems = []
    for index, step in enumerate(manifests.experiment.experiment.application.post):
        if fold_type_name(step.type) != EVAL_MCE:
            continue
        try:
            steps[step.step_name] = EvalConfig.model_validate(step.config)
        except ValidationError as exc:
            problems.extend(problems_from_validation(
                exc, source, f"experiment.application.post[{index}].config", model=EvalConfig))
    if problems:
        raise ManifestError(problems)
    return steps
