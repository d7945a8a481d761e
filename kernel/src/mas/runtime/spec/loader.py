"""Load manifest files into validated models, applying overlays first.

``load_manifest_set`` reads every document of the given files, validates overlays, merges
their patches into the documents they target, then validates every document — collecting
all problems of all files before raising one :class:`ManifestError`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from mas.runtime.errors import ManifestError, Problem
from mas.runtime.secrets import watch_env
from mas.runtime.spec.binding import Binding
from mas.runtime.spec.experiment import Experiment, LocalConfig
from mas.runtime.spec.manifests import DOCUMENT_KINDS, Agent, Infra, Mas, Overlay
from mas.runtime.spec.overlay import deep_merge
from mas.runtime.spec.problems import problems_from_validation
from mas.runtime.spec.yaml_io import read_yaml_documents

CONFIG_ENV = "MAS_CONFIG"
_PLAIN_KIND = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,31}")

BindingChecker = Callable[[Binding, str, str], list[Problem]]
"""Checks a context-manager binding: ``(binding, source, location) -> problems``."""


@dataclass
class RawDocument:
    """One YAML document before validation, with where it came from."""

    data: Any
    path: Path
    source: str

    @property
    def kind(self) -> str | None:
        """``kind:``, ``"experiment"`` for an experiment file, ``None`` when absent."""
        if isinstance(self.data, dict):
            if "kind" in self.data:
                return str(self.data["kind"])
            if "experiment" in self.data and "apiVersion" not in self.data:
                return "experiment"
        return None


@dataclass
class LoadedAgent:
    """A validated agent with its file and, when it belongs to one, its MAS."""

    agent: Agent
    path: Path
    source: str
    mas: Mas | None = None


@dataclass
class ManifestSet:
    """Everything loaded for one command: agents, MAS, infra, experiment, local config."""

    agents: list[LoadedAgent] = field(default_factory=list)
    mases: list[Mas] = field(default_factory=list)
    infra: Infra | None = None
    overlays: list[Overlay] = field(default_factory=list)
    experiment: Experiment | None = None
    experiment_path: Path | None = None
    config: LocalConfig = field(default_factory=LocalConfig)


def read_documents(path: Path) -> list[RawDocument]:
    """All documents of ``path``; sources read ``file`` or ``file (document N)``."""
    documents = read_yaml_documents(path)
    if len(documents) == 1:
        return [RawDocument(documents[0], path, str(path))]
    return [RawDocument(doc, path, f"{path} (document {i})") for i, doc in enumerate(documents, 1)]


def load_manifest_set(
    files: list[Path],
    *,
    overlays: Sequence[Path] = (),
    infra: Path | None = None,
    config: Path | None = None,
    check_binding: BindingChecker | None = None,
) -> ManifestSet:
    """Load, patch and validate manifests.

    :param files: manifest files (Agent, MAS, Infra, Overlay documents, or one experiment).
    :param overlays: extra Overlay files applied to the documents of ``files``.
    :param infra: an Infra manifest file.
    :param config: the local config.yaml; defaults to ``$MAS_CONFIG`` then ./config.yaml.
    :param check_binding: also checks the ``spec.context_manager`` binding of an Agent
        that failed validation elsewhere, so its unknown type or bad params are reported
        in the same pass (valid agents are bound when they are compiled).
    :raises ManifestError: one problem per thing wrong, across all files.
    """
    problems: list[Problem] = []
    documents = _read_all([*files, *overlays], problems)
    if infra is not None:
        documents.extend(_infra_documents(infra, problems))
    result = ManifestSet(config=_load_config(config, problems))
    overlay_pairs = [
        (overlay, doc)
        for doc in documents
        if doc.kind == "Overlay" and (overlay := _validate(Overlay, doc, problems)) is not None
    ]
    result.overlays = [overlay for overlay, _ in overlay_pairs]
    others = [doc for doc in documents if doc.kind != "Overlay"]
    for doc in others:
        if doc.kind == "experiment":
            _load_experiment(doc, result, problems)
    others.extend(_experiment_applications(result, problems))
    others.extend(_mas_agents(others, problems))
    _apply_overlays(overlay_pairs, others, problems)
    for doc in others:
        _validate_document(doc, result, problems, check_binding)
    if problems:
        raise ManifestError(problems)
    return result


def _read_all(paths: list[Path], problems: list[Problem]) -> list[RawDocument]:
    documents: list[RawDocument] = []
    for path in paths:
        try:
            documents.extend(read_documents(Path(path)))
        except ManifestError as exc:
            problems.extend(exc.problems)
    for doc in documents:
        if not isinstance(doc.data, dict):
            # No value echoed: a path that is not a manifest (say ../../etc/passwd) must
            # not have its content printed.
            problems.append(
                Problem(
                    doc.source,
                    "",
                    f"not a manifest: a document must be a mapping, not "
                    f"{type(doc.data).__name__}",
                )
            )
        elif doc.kind is None:
            problems.append(
                Problem(
                    doc.source,
                    "kind",
                    "Field required (Agent, MAS, Infra or Overlay; or a top-level experiment:)",
                )
            )
        elif doc.kind not in DOCUMENT_KINDS and doc.kind != "experiment":
            problems.append(
                Problem(
                    doc.source,
                    "kind",
                    f"unknown kind; expected one of {', '.join(DOCUMENT_KINDS)}",
                    doc.kind,
                    _PLAIN_KIND.fullmatch(doc.kind) is not None,  # else it may be content
                )
            )
    known = {*DOCUMENT_KINDS, "experiment"}
    return [doc for doc in documents if isinstance(doc.data, dict) and doc.kind in known]


def _infra_documents(path: Path, problems: list[Problem]) -> list[RawDocument]:
    """The documents of an ``--infra`` file, every one of which must be an Infra: an Agent
    passed there by mistake would otherwise be loaded as a second agent (``run``) or be
    left unread while judge calls go out without the deployment the user meant (``eval``)."""
    documents = _read_all([path], problems)
    for doc in documents:
        if doc.kind != "Infra":
            problems.append(Problem(doc.source, "kind", "--infra takes an Infra manifest",
                                    doc.kind, True))
    return [doc for doc in documents if doc.kind == "Infra"]


def _validate(model: type[BaseModel], doc: RawDocument, problems: list[Problem]) -> Any:
    try:
        return model.model_validate(doc.data)
    except ValidationError as exc:
        problems.extend(problems_from_validation(exc, doc.source, model=model))
        return None


def _load_experiment(doc: RawDocument, result: ManifestSet, problems: list[Problem]) -> None:
    if result.experiment is not None:
        problems.append(
            Problem(doc.source, "experiment", "only one experiment may be loaded at a time")
        )
        return
    result.experiment = _validate(Experiment, doc, problems)
    result.experiment_path = doc.path


def _experiment_applications(result: ManifestSet, problems: list[Problem]) -> list[RawDocument]:
    if result.experiment is None or result.experiment_path is None:
        return []
    base = result.experiment_path.parent
    documents: list[RawDocument] = []
    for i, app in enumerate(result.experiment.experiment.applications):
        path = base / app.manifest
        if not path.is_file():
            problems.append(
                Problem(
                    str(result.experiment_path),
                    f"experiment.applications[{i}].manifest",
                    "file not found",
                    app.manifest,
                    True,
                )
            )
            continue
        documents.extend(_read_all([path], problems))
    return documents


def _mas_agents(documents: list[RawDocument], problems: list[Problem]) -> list[RawDocument]:
    """Agent documents a MAS names by path, read relative to the MAS file."""
    found: list[RawDocument] = []
    for doc in documents:
        if doc.kind != "MAS":
            continue
        agents = (
            doc.data.get("spec", {}).get("agents", [])
            if isinstance(doc.data.get("spec"), dict)
            else []
        )
        for i, ref in enumerate(agents if isinstance(agents, list) else []):
            manifest = ref.get("manifest") if isinstance(ref, dict) else None
            if not isinstance(manifest, str):
                continue  # the MAS model reports the malformed row
            path = doc.path.parent / manifest
            if not path.is_file():
                problems.append(
                    Problem(
                        doc.source, f"spec.agents[{i}].manifest", "file not found", manifest, True
                    )
                )
                continue
            for agent_doc in _read_all([path], problems):
                agent_doc.data = {**agent_doc.data, "_mas": doc}
                found.append(agent_doc)
    return found


def _apply_overlays(
    overlays: list[tuple[Overlay, RawDocument]],
    documents: list[RawDocument],
    problems: list[Problem],
) -> None:
    for overlay, overlay_doc in overlays:
        target = overlay.spec.target
        matches = [
            doc
            for doc in documents
            if doc.kind == target.kind and (target.name is None or _doc_name(doc) == target.name)
        ]
        if not matches:
            wanted = f"kind {target.kind}" + (f" named {target.name!r}" if target.name else "")
            problems.append(
                Problem(
                    overlay_doc.source,
                    "spec.target",
                    f"overlay {overlay.metadata.name!r} targets {wanted}, "
                    "but no such document was loaded",
                )
            )
        for doc in matches:
            spec = doc.data.get("spec") or {}
            doc.data = {**doc.data, "spec": deep_merge(spec, overlay.spec.patch)}


def _doc_name(doc: RawDocument) -> str | None:
    metadata = doc.data.get("metadata")
    return metadata.get("name") if isinstance(metadata, dict) else None


def _validate_document(
    doc: RawDocument,
    result: ManifestSet,
    problems: list[Problem],
    check_binding: BindingChecker | None,
) -> None:
    if doc.kind == "experiment":
        return
    data = dict(doc.data)
    mas_doc = data.pop("_mas", None)
    model = DOCUMENT_KINDS[doc.kind]  # type: ignore[index]
    validated = _validate(model, RawDocument(data, doc.path, doc.source), problems)
    if validated is None:
        if doc.kind == "Agent" and check_binding is not None:
            problems.extend(_binding_problems(data, doc.source, check_binding))
        return
    if isinstance(validated, Agent):
        mas = _validate(Mas, mas_doc, []) if mas_doc is not None else None
        result.agents.append(LoadedAgent(validated, doc.path, doc.source, mas))
    elif isinstance(validated, Mas):
        result.mases.append(validated)
    elif isinstance(validated, Infra):
        generation = validated.spec.generation
        if generation is not None and generation.api_key_env:
            watch_env(generation.api_key_env)  # its value is masked in every later text
        if result.infra is not None:
            problems.append(Problem(doc.source, "kind", "more than one Infra document loaded"))
        result.infra = validated


def _binding_problems(data: dict[str, Any], source: str, check: BindingChecker) -> list[Problem]:
    spec = data.get("spec")
    raw = spec.get("context_manager") if isinstance(spec, dict) else None
    if raw is None:
        return []
    try:
        binding = Binding.model_validate(raw)
    except ValidationError:
        return []  # a malformed binding is already among the agent's own problems
    return check(binding, source, "spec.context_manager")


def _load_config(path: Path | None, problems: list[Problem]) -> LocalConfig:
    if path is None:
        env = os.environ.get(CONFIG_ENV)
        path = Path(env) if env else Path("config.yaml")
        if not path.is_file():
            return LocalConfig()
    try:
        documents = read_yaml_documents(path)
    except ManifestError as exc:
        problems.extend(exc.problems)
        return LocalConfig()
    config = _validate(LocalConfig, RawDocument(documents[0], Path(path), str(path)), problems)
    return config or LocalConfig()
