"""The experiment file (top-level ``experiment:``) and the local ``config.yaml``.

The kernel validates these; library-lab executes experiments.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from mas.runtime.spec.manifests import FolderName, Strict


class ApplicationRef(Strict):
    """One ``experiment.applications[]`` entry: an Agent or MAS manifest by path."""

    manifest: str = Field(min_length=1, description="Path relative to the experiment file.")


class EvaluationConfig(Strict):
    """``experiment.evaluation.config``."""

    model: str | None = Field(default=None, description="Judge model (alias of evaluation.model).")


class Evaluation(Strict):
    """``experiment.evaluation``: how runs are scored."""

    method: str = Field(default="llm_judge", description="Scoring method.")
    model: str | None = Field(default=None, description="Judge override; wins over models.judge.")
    config: EvaluationConfig = Field(default_factory=EvaluationConfig)


class StepSpec(Strict):
    """One pipeline step of ``experiment.application.post``."""

    type: str = Field(min_length=1, description="Registered lab step type, e.g. eval_mce.")
    name: FolderName | None = Field(
        default=None, description="Step name; defaults to the type (a file name)."
    )
    depends_on: list[str] = Field(default_factory=list, description="Steps that run first.")
    config: dict[str, Any] = Field(default_factory=dict, description="The step's params.")

    @property
    def step_name(self) -> str:
        """The name other steps use in ``depends_on``."""
        return self.name or self.type


class Pipeline(Strict):
    """``experiment.application``: steps around the sessions."""

    post: list[StepSpec] = Field(default_factory=list, description="Steps after the sessions.")

    @field_validator("post")
    @classmethod
    def _unique_names(cls, steps: list[StepSpec]) -> list[StepSpec]:
        seen: set[str] = set()
        for step in steps:
            if step.step_name in seen:
                raise ValueError(f"two steps are named {step.step_name!r}; give one a name:")
            seen.add(step.step_name)
        return steps


class Flavour(Strict):
    """One arm of an ablation: overlays applied to every application."""

    name: FolderName = Field(
        min_length=1, description="Flavour name, used in tables and folders."
    )
    overlays: list[str] = Field(default_factory=list, description="Overlay files, in order.")
    patch: dict[str, Any] = Field(
        default_factory=dict, description="Inline patch of the agent spec, after the overlays."
    )


class Runner(Strict):
    """``experiment.runner``: where the sessions run. The kernel never imports Ray."""

    backend: Literal["local", "ray"] = Field(
        default="local", description="local: threads in this process; ray: tasks on a Ray cluster."
    )
    address: str | None = Field(
        default=None, min_length=1,
        description="Ray cluster to join (auto, host:port, ray://host:port); unset: start one.",
    )
    num_cpus_per_session: float = Field(
        default=1.0, gt=0, description="CPUs Ray reserves for each session task."
    )


def _string_or_mapping(schema: dict[str, Any]) -> None:
    """The JSON Schema of :class:`DatasetSpec`: the mapping, or the path alone."""
    mapping = dict(schema)
    schema.clear()
    schema.update(title=mapping.pop("title", "DatasetSpec"), anyOf=[
        {"type": "string", "minLength": 1, "description": "The dataset file (format jsonl)."},
        mapping])


class DatasetSpec(Strict):
    """``experiment.dataset``: the file, its format and how much of it to take.

    The string form ``dataset: ./file.jsonl`` is ``{path: ./file.jsonl}``.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True,
                              json_schema_extra=_string_or_mapping)

    path: str = Field(min_length=1, description="The dataset file, relative to the experiment.")
    format: Literal["jsonl", "locomo", "longmemeval"] = Field(
        default="jsonl",
        description="jsonl: the lab's scripted sessions; locomo: LoCoMo's JSON "
        "(locomo10.json); longmemeval: LongMemEval's JSON (longmemeval_s/_m/_oracle.json).",
    )
    limit: int | None = Field(
        default=None, ge=1,
        description="Only the first N items (conversations, LongMemEval instances) of the file.",
    )
    questions: int | None = Field(
        default=None, ge=1, description="Only the first N questions (probes) of each item."
    )
    probes: Literal["inline", "isolated"] | None = Field(
        default=None,
        description="inline: every probe is a turn of the session; isolated: each probe is "
        "asked from its own copy of the session at that point and leaves no trace in it. "
        "Unset: as the file has them (a JSONL probe is inline unless it has its own "
        "question; a benchmark's questions are isolated).",
    )

    @model_validator(mode="before")
    @classmethod
    def _path_alone(cls, raw: Any) -> Any:
        return {"path": raw} if isinstance(raw, str) else raw


class ExperimentBody(Strict):
    """The mapping under the top-level ``experiment:`` key."""

    name: FolderName = Field(min_length=1, description="Experiment name (run folder name).")
    models: dict[str, str] = Field(
        default_factory=dict, description="Slot map: main, summarizer, judge, ..."
    )
    model: str | None = Field(default=None, description="Shorthand for models.main.")
    applications: list[ApplicationRef] = Field(default_factory=list)
    flavours: list[Flavour] = Field(default_factory=list, description="Ablation arms.")
    dataset: DatasetSpec | None = Field(
        default=None,
        description="The dataset: a JSONL path, or {path, format, limit, questions, probes}.",
    )
    n_runs: int = Field(default=1, ge=1, description="Runs per flavour and item.")
    vars: dict[str, str] = Field(
        default_factory=dict, description="Pipeline template vars (eval_model, judge_model)."
    )
    evaluation: Evaluation = Field(default_factory=Evaluation)
    application: Pipeline = Field(default_factory=Pipeline)
    runner: Runner = Field(default_factory=Runner, description="Where the sessions run.")
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="Free-form annotations (model_name: legacy)."
    )

    @model_validator(mode="after")
    def _model_shorthand(self) -> ExperimentBody:
        if self.model is not None and "main" in self.models and self.models["main"] != self.model:
            raise ValueError(
                f"experiment.model {self.model!r} disagrees with models.main "
                f"{self.models['main']!r}; set one of them"
            )
        return self

    @field_validator("flavours")
    @classmethod
    def _unique_flavours(cls, flavours: list[Flavour]) -> list[Flavour]:
        names = [f.name for f in flavours]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"duplicate flavour name {duplicates[0]!r}")
        return flavours

    def slot(self, name: str) -> str | None:
        """The model pinned for slot ``name`` (``model`` stands for ``models.main``)."""
        if name == "main" and "main" not in self.models:
            return self.model
        return self.models.get(name)


class Experiment(Strict):
    """An experiment file: one top-level ``experiment:`` key."""

    experiment: ExperimentBody


class Defaults(Strict):
    """``defaults`` of the local config.yaml."""

    model: str | None = Field(default=None, description="Fills `any` on this machine only.")


class LocalConfig(Strict):
    """The local ``config.yaml``: machine-level defaults, never committed with specs."""

    defaults: Defaults = Field(default_factory=Defaults)
