"""The lab run folder ``runs/<experiment>/<timestamp>/`` and how a run is resumed.

Layout (docs/lab.md)::

    run.json                      what was run: experiment, fingerprint, options, grid
    pipeline.json                 one record per step (status, outputs, metadata)
    manifests/<flavour>/<agent>.yaml   compiled manifests per flavour
    sessions/<flavour>/<item>/run-<k>/ one session run folder each (docs/run-folder.md)
    sessions.json, trajectories.jsonl, eval/<step>.json, results.json, report.html, plots/

A run is identified by a fingerprint of everything that decides its sessions (experiment,
applications, overlays, dataset, selected flavours, limit, model override). Running the
same command again reuses the latest run folder with the same fingerprint, so an
interrupted run resumes and a finished one is done at once.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mas.library.lab.executors.ray_backend import agent_files
from mas.runtime.errors import StorageError
from mas.runtime.paths import contained, hold_lock
from mas.runtime.secrets import mask
from mas.runtime.session.store import remove_orphans

if TYPE_CHECKING:
    from mas.library.lab.experiment import LabExperiment

RUN_FILE = "run.json"
LOCK_FILE = ".lock"
PIPELINE_FILE = "pipeline.json"
SESSIONS_DIR = "sessions"
MANIFESTS_DIR = "manifests"


def write_json(path: Path, data: Any) -> Path:
    """Write ``data`` as indented JSON atomically (a crash never leaves half a file)."""
    return write_text(path, json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def write_text(path: Path, text: str) -> Path:
    """Write ``text`` atomically, keys masked (:func:`mas.runtime.secrets.mask`).

    :raises StorageError: the disk is full or the folder unwritable (names the file).
    """
    return write_bytes(path, mask(text).encode("utf-8"))


def write_bytes(path: Path, data: bytes) -> Path:
    """Write ``data`` atomically, as it is (a session folder's files returned by a worker).

    :raises StorageError: the disk is full or the folder unwritable (names the file).
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    except OSError as exc:
        raise StorageError.writing(path, exc) from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; run folders are meant to be shared
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise StorageError.writing(path, exc) from exc
        raise
    return path


def read_json(path: Path, default: Any = None) -> Any:
    """JSON content of ``path``, or ``default`` when it is missing or unreadable."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return default


def fingerprint(experiment: LabExperiment) -> str:
    """A hash of every input that decides the sessions of a run."""
    digest = hashlib.sha256()
    files = {experiment.path, experiment.dataset.path}
    files.update(experiment.path.parent / app.manifest for app in experiment.body.applications)
    for flavour in experiment.flavours:
        files.update(loaded.path for loaded in flavour.manifests.agents)
        for declared in experiment.body.flavours:
            files.update(experiment.path.parent / overlay for overlay in declared.overlays)
    for path in sorted(files):
        digest.update(path.name.encode())
        # In chunks: a benchmark file the user supplies may hold gigabytes.
        with path.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    # The skills each agent's sessions read (issue 26, item 8): a changed SKILL.md is a
    # different run, not the old results resumed.
    homes = {(loaded.path.parent, loaded.agent.spec.context_sources.skills_dir)
             for flavour in experiment.flavours for loaded in flavour.manifests.agents}
    for home, skills_dir in sorted(homes):
        for name, data in sorted(agent_files(home, skills_dir).items()):
            digest.update(name.encode())
            digest.update(data)
    for flavour in experiment.flavours:
        # Infra, MAS and config.yaml as each flavour resolved them: a changed endpoint,
        # price or local default model is a different run (docs/lab.md, "Resuming").
        manifests = flavour.manifests
        for document in (manifests.infra, manifests.config, *manifests.mases):
            if document is not None:
                digest.update(document.model_dump_json().encode())
    options = {**experiment.options, "flavours": [f.name for f in experiment.flavours],
               "items": [item.id for item in experiment.items]}
    digest.update(json.dumps(options, sort_keys=True).encode())
    return digest.hexdigest()[:16]


@dataclass
class RunFolder:
    """One lab run folder."""

    path: Path

    @property
    def info(self) -> dict[str, Any]:
        """``run.json``."""
        return read_json(self.path / RUN_FILE, {}) or {}

    def steps(self) -> dict[str, dict[str, Any]]:
        """The step records of ``pipeline.json`` by step name."""
        return read_json(self.path / PIPELINE_FILE, {}) or {}

    def finished(self) -> bool:
        """Every step of the last pass is ``ok`` or ``skipped``."""
        steps = self.steps()
        return bool(steps) and all(r.get("status") in ("ok", "skipped") for r in steps.values())

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the folder's lock: two passes over one run folder would interleave sessions.

        :raises MasError: another process holds it.
        """
        # hold_lock never follows a symlink: a planted .lock link is refused, not truncated
        # through to its target.
        with hold_lock(self.path / LOCK_FILE, f"mas-ctl lab (pid {os.getpid()})",
                       "wait for it to finish (or pass --new for a separate run folder)"):
            remove_orphans(self.path)  # left by a killed pass; no writer owns them now
            yield

    def session_dir(self, flavour: str, item: str, run_index: int) -> Path:
        """The session run folder of one grid cell.

        :raises UnsafePathError: it would resolve outside the run folder.
        """
        return self.inside(self.path / SESSIONS_DIR / flavour / item / f"run-{run_index}")

    def manifest_path(self, flavour: str, agent: str) -> Path:
        """Where the compiled manifest of ``agent`` in ``flavour`` is written.

        :raises UnsafePathError: it would resolve outside the run folder.
        """
        return self.inside(self.path / MANIFESTS_DIR / flavour / f"{agent}.yaml")

    def inside(self, path: Path) -> Path:
        """``path`` unchanged, once checked to resolve inside the run folder.

        :raises UnsafePathError: a ``..`` or a symlink takes it outside.
        """
        contained(self.path, path)
        return path

    def relative(self, path: Path) -> str:
        """``path`` relative to the run folder, with ``/`` separators."""
        return path.relative_to(self.path).as_posix()


def open_run(
    runs_root: Path, experiment: LabExperiment, *, new: bool = False
) -> tuple[RunFolder, bool]:
    """The run folder for ``experiment``: the latest one with its fingerprint, else a new one.

    :return: the folder and whether it was resumed.
    """
    print_ = fingerprint(experiment)
    base = runs_root / experiment.name
    if not new:
        for candidate in sorted(base.glob("*/" + RUN_FILE), reverse=True):
            if (read_json(candidate, {}) or {}).get("fingerprint") == print_:
                contained(runs_root, candidate.parent)  # a symlinked run folder is refused
                return RunFolder(candidate.parent), True
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    path = base / stamp
    suffix = 1
    while path.exists():
        suffix += 1
        path = base / f"{stamp}-{suffix}"
    contained(runs_root, path)
    path.mkdir(parents=True)
    write_json(path / RUN_FILE, {
        "experiment": experiment.name,
        "experiment_file": str(experiment.path),
        "fingerprint": print_,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "options": experiment.options,
        "flavours": [f.name for f in experiment.flavours],
        "items": [item.id for item in experiment.items],
        "n_runs": experiment.body.n_runs,
        "steps": experiment.pipeline.names(),
    })
    return RunFolder(path), False


def list_runs(runs_root: Path) -> list[RunFolder]:
    """Every lab run folder under ``runs_root`` (``<experiment>/<timestamp>/``), oldest first."""
    return [RunFolder(p.parent) for p in sorted(runs_root.glob("*/*/" + RUN_FILE))]
