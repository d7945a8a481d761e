"""What runs on a Ray worker: one session in a scratch folder, its files sent back.

Nothing here writes outside the worker's temporary folder. A worker needs the same
distributions and plugins as the driver (checked by :func:`plugin_inventory` at start) and
nothing else: the flavour's manifests and its agents' skill files travel with the task, and
the response cache, when the Infra enables one, stays on the driver's node
(:class:`CacheKeeper`, reached through :class:`DriverCache`).
"""

from __future__ import annotations

import copy
import functools
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mas.library.lab.dataset import Item
from mas.library.lab.executors import Play, SessionResult
from mas.library.lab.experiment import Flavour
from mas.library.lab.sessions import SessionJob
from mas.runtime.engine.cache import ResponseCache
from mas.runtime.protocols import ModelReply
from mas.runtime.runtime import Runtime
from mas.runtime.spec.compile import compile_all
from mas.runtime.spec.loader import ManifestSet

AGENTS_DIR = "agents"
SESSION_DIR = "session"


@dataclass(frozen=True)
class FlavourBundle:
    """One flavour as a worker rebuilds it: its manifests and its agents' files.

    :ivar files: per agent (index in ``manifests.agents``), the files the session reads
        next to the manifest (its skills), by path relative to the manifest's folder.
    :ivar cache: the driver's cache keeper and how to use it, or ``None``.
    """

    name: str
    manifests: ManifestSet
    files: dict[int, dict[str, bytes]] = field(default_factory=dict)
    cache: tuple[Any, str, bool] | None = None


@dataclass(frozen=True)
class RemoteJob:
    """The picklable part of a :class:`SessionJob`, plus the files already in its folder."""

    experiment: str
    item: Item
    run_index: int
    seed: int
    session_id: str
    existing: dict[str, bytes] = field(default_factory=dict)


class CacheKeeper:
    """The driver's response cache, served to workers (a Ray actor on the driver's node).

    One SQLite file on one machine, as under the local runner, so a warm cache answers the
    same requests with the same replies whichever node asks.
    """

    def __init__(self, path: str, strict: bool) -> None:
        self.cache = ResponseCache(path, strict=strict)

    def get(self, key: str) -> ModelReply | None:
        """The stored reply for ``key``, or ``None``."""
        return self.cache.get(key)

    def put(self, key: str, reply: ModelReply) -> None:
        """Store ``reply`` under ``key``."""
        self.cache.put(key, reply)

    def size(self) -> int:
        """Stored replies."""
        return len(self.cache)


class DriverCache(ResponseCache):
    """A :class:`ResponseCache` whose lookups and stores go to the driver's keeper.

    It opens no file on the worker; the engine sees the same ``path`` and ``strict`` as the
    driver's Infra says.
    """

    def __init__(self, keeper: Any, path: str, strict: bool) -> None:  # no super(): no file here
        self.path = Path(path)
        self.strict = strict
        self._keeper = keeper

    def get(self, key: str) -> ModelReply | None:
        """Ask the driver's cache."""
        import ray

        reply: ModelReply | None = ray.get(self._keeper.get.remote(key))
        return reply

    def put(self, key: str, reply: ModelReply) -> None:
        """Store in the driver's cache (waits, so a later lookup sees it)."""
        import ray

        ray.get(self._keeper.put.remote(key, reply))

    def __len__(self) -> int:
        import ray

        return int(ray.get(self._keeper.size.remote()))

    def close(self) -> None:
        """Nothing to close on the worker."""


@functools.lru_cache(maxsize=1)
def worker_runtime() -> Runtime:
    """This worker process's runtime, built once: loading the plugins per task would cost more
    than many sessions' context work."""
    return Runtime.create()


def plugin_inventory() -> dict[str, str]:
    """The plugins this process loads: name -> ``distribution version`` (the start check).

    Taken from a runtime built here, so a plugin that is installed but fails to load, or
    that ``MAS_DISABLE_PLUGINS`` leaves out, is missing from the answer.
    """
    from importlib.metadata import entry_points

    versions = {point.name: f"{point.dist.name} {point.dist.version}"
                for point in entry_points(group="mas") if point.dist is not None}
    # A blocked name stays in pluggy's list with no plugin behind it: it is not loaded.
    loaded = [name for name, plugin in worker_runtime().pm.list_name_plugin() if plugin is not None]
    return {name: versions.get(name, "built in") for name in loaded}


def play_remote(play: Play, job: RemoteJob, bundle: FlavourBundle) -> SessionResult:
    """Play ``job`` in a scratch folder; return its error, time and every file it wrote."""
    runtime = worker_runtime()
    with tempfile.TemporaryDirectory(prefix="mas-lab-session-") as scratch:
        root = Path(scratch)
        manifests = _unpack(bundle, root / AGENTS_DIR, root)
        flavour = Flavour(bundle.name, manifests, compile_all(runtime, manifests))
        folder = root / SESSION_DIR
        _write_files(folder, job.existing, folder)
        cache = DriverCache(*bundle.cache) if bundle.cache else None
        session = SessionJob(experiment=job.experiment, flavour=flavour, item=job.item,
                             run_index=job.run_index, seed=job.seed, session_id=job.session_id,
                             folder=folder, runtime=runtime, cache=cache)
        started = time.monotonic()
        error = play(session)
        seconds = time.monotonic() - started
        files = folder_files(folder)
    return SessionResult(error, seconds, files)


def _unpack(bundle: FlavourBundle, root: Path, scratch: Path) -> ManifestSet:
    """The bundle's manifests, each agent moved to ``root/<index>/`` with its files there."""
    manifests = copy.deepcopy(bundle.manifests)
    for index, loaded in enumerate(manifests.agents):
        home = root / str(index)
        _write_files(home, bundle.files.get(index, {}), scratch)
        loaded.path = home / loaded.path.name
    return manifests


def folder_files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (symlinks left out), by ``/``-separated relative path."""
    if not folder.is_dir():
        return {}
    return {path.relative_to(folder).as_posix(): path.read_bytes()
            for path in sorted(folder.rglob("*")) if path.is_file() and not path.is_symlink()}


def _write_files(folder: Path, files: dict[str, bytes], limit: Path) -> None:
    """Write ``files`` (path relative to ``folder`` -> content), never outside ``limit``.

    A skills folder may sit beside its manifest (``../skills``), so the limit is the whole
    scratch folder rather than ``folder`` itself.
    """
    base = limit.resolve()
    for relative, data in files.items():
        path = (folder / relative).resolve()
        if not path.is_relative_to(base):
            raise ValueError(f"{relative!r}: leaves the worker's scratch folder")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
