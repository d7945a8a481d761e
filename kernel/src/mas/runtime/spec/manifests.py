"""Pydantic models of the manifest kinds: Agent, MAS, Infra and Overlay.

Each file document has the envelope ``apiVersion: mas/v1``, ``kind``, ``metadata.name``
and ``spec``. Models are strict (unknown keys are errors) and validated once, when the
file is loaded; nothing here runs on the hot path.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from mas.runtime.paths import FOLDER_NAME_PATTERN, MAX_NAME_LENGTH, check_folder_name
from mas.runtime.spec.auto import AutoInt
from mas.runtime.spec.binding import Binding
from mas.runtime.spec.windows import MAX_CONTEXT_WINDOW

API_VERSION = "mas/v1"

FolderName = Annotated[
    str,
    AfterValidator(check_folder_name),
    # The same rule for an editor (mas-ctl schema); validation stays check_folder_name's.
    Field(json_schema_extra={"pattern": FOLDER_NAME_PATTERN, "maxLength": MAX_NAME_LENGTH}),
]
"""A name that becomes a folder or file name: no separator, no leading dot (mas.runtime.paths)."""


class Strict(BaseModel):
    """Base of every manifest model: unknown keys are errors, values are not coerced away."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Metadata(Strict):
    """``metadata``: the document's name plus free-form labels and annotations."""

    name: FolderName = Field(
        min_length=1, description="Name of this document, unique per kind (a folder name)."
    )
    labels: dict[str, str] = Field(default_factory=dict, description="Free-form labels.")
    annotations: dict[str, str] = Field(default_factory=dict, description="Free-form notes.")


class ModelSpec(Strict):
    """One ``spec.models[]`` row: a named model slot.

    ``model: any`` (or omitting ``model``) means inherit from the enclosing scope.
    """

    id: str = Field(min_length=1, description="Slot id: main, summarizer, judge or your own.")
    model: str | None = Field(default=None, description="LiteLLM model id, or `any` to inherit.")
    context_window: AutoInt = Field(
        default=None,
        gt=0,
        le=MAX_CONTEXT_WINDOW,
        description="Input window in tokens; omitted or `auto` = resolved at run time.",
    )
    max_tokens: int | None = Field(
        default=None,
        gt=0,
        le=MAX_CONTEXT_WINDOW,
        description="Completion reserve; also sent as the output limit. Must be below the "
        "window.",
    )
    timeout: float | None = Field(
        default=None,
        gt=0,
        description="Seconds one call to this model may take in all; omitted = Infra "
        "generation.timeout.",
    )
    num_retries: int | None = Field(
        default=None,
        ge=0,
        description="Extra attempts on transient errors for this model; omitted = Infra "
        "generation.num_retries.",
    )


def _unique_ids(rows: list[ModelSpec]) -> list[ModelSpec]:
    seen: set[str] = set()
    for row in rows:
        if row.id in seen:
            raise ValueError(f"duplicate spec.models[].id {row.id!r}")
        seen.add(row.id)
    return rows


class Compaction(Strict):
    """``spec.working_memory.compaction``: sugar for a ``summarising`` context manager."""

    strategy: Literal["summarize", "drop"] = Field(
        default="summarize", description="summarize (llm summarizer) or drop (no model call)."
    )
    model: str | None = Field(default=None, description="Summarizer model (id or LiteLLM id).")
    keep_turns: int | None = Field(default=None, ge=0, description="Recent user turns kept.")
    instructions: str | None = Field(default=None, description="Summarizer system prompt.")

    def to_binding(self) -> Binding:
        """The ``spec.context_manager`` binding this sugar stands for."""
        summarizer_params: dict[str, Any] = {}
        if self.model is not None:
            summarizer_params["model"] = self.model
        if self.instructions is not None:
            summarizer_params["instructions"] = self.instructions
        summarizer_type = "llm" if self.strategy == "summarize" else "drop"
        params: dict[str, Any] = {
            "summarizer": {"type": summarizer_type, "params": summarizer_params}
        }
        if self.keep_turns is not None:
            params["keep_turns"] = self.keep_turns
        return Binding(type="summarising", params=params)


class WorkingMemory(Strict):
    """``spec.working_memory``."""

    compaction: Compaction | None = Field(default=None, description="Compaction sugar.")


class ContextSources(Strict):
    """``spec.context_sources``: where system context comes from."""

    pin_activated: bool = Field(
        default=True,
        description="Pin each activated skill's body as a system part (the history copy is "
        "then left out of the request).",
    )
    skills_dir: str = Field(default="skills", description="Folder holding <name>/SKILL.md.")


class Budget(Strict):
    """``spec.budget``: hard limits on a run."""

    max_llm_calls: int | None = Field(
        default=None, ge=1, description="Most model calls per session, summaries included."
    )
    max_reply_chars: int = Field(
        default=1_000_000, ge=1,
        description="Longest model reply kept, in characters; a longer one is cut to this "
        "and the session counts it as degraded (replies_capped).",
    )


class Estimation(Strict):
    """``spec.estimation``: how the chars/4 token estimate is corrected."""

    calibrate: bool = Field(
        default=True,
        description="Scale the budget by the provider's prompt_tokens / estimate ratio, "
        "learned per model during the session (until then, assume a token per digit).",
    )
    min_observations: int = Field(
        default=3, ge=1, description="Model calls seen before the learned ratio is applied."
    )
    counter: Literal["chars", "litellm"] = Field(
        default="chars",
        description="How tokens are counted: chars (chars/4 plus overheads, calibrated) or "
        "litellm (litellm.token_counter with the turn model's tokenizer, exact but slower).",
    )


DEFAULT_CONTEXT_MANAGER = "summarising"


class AgentSpec(Strict):
    """``spec`` of ``kind: Agent``."""

    instructions: str = Field(default="", description="The agent's role prompt (system).")
    models: list[ModelSpec] = Field(default_factory=list, description="Model slots.")
    context_manager: Binding | None = Field(
        default=None, description="History strategy; default `summarising`."
    )
    working_memory: WorkingMemory = Field(default_factory=WorkingMemory)
    context_sources: ContextSources = Field(default_factory=ContextSources)
    budget: Budget = Field(default_factory=Budget)
    estimation: Estimation = Field(default_factory=Estimation)

    _check_ids = field_validator("models")(_unique_ids)

    def effective_context_manager(self) -> tuple[Binding, str]:
        """The binding in force and where it came from.

        ``context_manager`` wins over ``working_memory.compaction``; with neither, the
        package default ``summarising`` applies.
        """
        if self.context_manager is not None:
            return self.context_manager, "spec.context_manager"
        if self.working_memory.compaction is not None:
            return self.working_memory.compaction.to_binding(), "spec.working_memory.compaction"
        return Binding(type=DEFAULT_CONTEXT_MANAGER), "default"


class Envelope(Strict):
    """Fields every document kind shares."""

    api_version: Literal["mas/v1"] = Field(alias="apiVersion", description="Always mas/v1.")
    metadata: Metadata


class Agent(Envelope):
    """``kind: Agent``: one agent, its model slots and its context strategy."""

    kind: Literal["Agent"]
    spec: AgentSpec = Field(default_factory=AgentSpec)
    status: dict[str, Any] | None = Field(
        default=None,
        description="What `mas-ctl compile` resolved; ignored when read, so compile "
        "output loads as it is.",
    )


class AgentRef(Strict):
    """One ``spec.agents[]`` row of a MAS: an agent manifest by path."""

    name: str = Field(min_length=1, description="Agent name within the MAS.")
    manifest: str = Field(
        min_length=1, description="Path of the Agent manifest, relative to this file."
    )


class MasSpec(Strict):
    """``spec`` of ``kind: MAS``: shared model slots and its agents."""

    models: list[ModelSpec] = Field(default_factory=list, description="Slots every agent inherits.")
    agents: list[AgentRef] = Field(default_factory=list, description="The agents.")

    _check_ids = field_validator("models")(_unique_ids)


class Mas(Envelope):
    """``kind: MAS``: a multi-agent system whose model slots its agents inherit."""

    kind: Literal["MAS"]
    spec: MasSpec = Field(default_factory=MasSpec)


class Pricing(Strict):
    """``generation.pricing``: per-million-token rates overriding the catalog."""

    input_per_million_tokens: float = Field(ge=0, description="USD per 1M uncached input tokens.")
    cached_input_per_million_tokens: float | None = Field(
        default=None, ge=0, description="USD per 1M cached input tokens; omitted = input rate."
    )
    cache_write_per_million_tokens: float | None = Field(
        default=None, ge=0, description="USD per 1M cache-write input tokens; omitted = input rate."
    )
    output_per_million_tokens: float = Field(ge=0, description="USD per 1M output tokens.")


class Generation(Strict):
    """``spec.generation`` of an Infra: how calls reach the provider."""

    context_window: int | None = Field(
        default=None, gt=0, le=MAX_CONTEXT_WINDOW, description="Window override."
    )
    max_tokens: int | None = Field(
        default=None,
        gt=0,
        le=MAX_CONTEXT_WINDOW,
        description="Effective output budget (wins for the reserve).",
    )
    pricing: Pricing | None = Field(default=None, description="Rates overriding the catalog.")
    api_base: str | None = Field(default=None, description="OpenAI-compatible server URL.")
    api_key_env: str | None = Field(
        default=None, description="Name of the environment variable holding the API key."
    )
    timeout: float = Field(
        default=60.0, gt=0, description="Seconds one attempt may take in all (not per read)."
    )
    num_retries: int = Field(
        default=2, ge=0, description="Extra attempts on 408/409/429/5xx/529 and dropped "
        "connections; a timed-out attempt is not retried."
    )


class Cache(Strict):
    """``spec.cache``: the on-disk response cache (``infra_llm_cache`` layer)."""

    enabled: bool = Field(default=False, description="Look responses up before calling.")
    path: str = Field(default=".mas/cache.sqlite", description="SQLite file.")
    strict: bool = Field(default=False, description="A miss is an error (offline replay).")


class InfraSpec(Strict):
    """``spec`` of ``kind: Infra``: deployment facts that override the catalog."""

    generation: Generation = Field(default_factory=Generation)
    models: dict[str, str] = Field(
        default_factory=dict, description="Model mappings: manifest model -> deployed model."
    )
    cache: Cache = Field(default_factory=Cache)


class Infra(Envelope):
    """``kind: Infra``: where and how models are reached."""

    kind: Literal["Infra"]
    spec: InfraSpec = Field(default_factory=InfraSpec)


class OverlayTarget(Strict):
    """``spec.target`` of an Overlay: which documents it patches."""

    kind: Literal["Agent", "MAS", "Infra"] = Field(description="Kind of the documents patched.")
    name: str | None = Field(default=None, description="Only the document with this name.")


class OverlaySpec(Strict):
    """``spec`` of ``kind: Overlay``."""

    target: OverlayTarget
    patch: dict[str, Any] = Field(description="Deep-merged into the target's spec.")

    @model_validator(mode="after")
    def _patch_not_empty(self) -> OverlaySpec:
        if not self.patch:
            raise ValueError("patch is empty")
        return self


class Overlay(Envelope):
    """``kind: Overlay``: a patch applied to matching documents before validation."""

    kind: Literal["Overlay"]
    spec: OverlaySpec


DOCUMENT_KINDS: dict[str, type[Envelope]] = {
    "Agent": Agent,
    "MAS": Mas,
    "Infra": Infra,
    "Overlay": Overlay,
}
"""Envelope kinds by their ``kind:`` string."""
