"""Sessions as Ray tasks on an existing cluster (``--backend ray``; ``mas-library-lab[ray]``).

The driver (this process) joins the cluster, checks that every node has the driver's
plugins, and sends each session as one task with ``num_cpus_per_session`` CPUs and no
retries. A local instance the driver started ends with the driver, also when the driver
is killed (:mod:`~mas.library.lab.executors.ray_reaper`). A task returns the session's
files; the runner writes them, so the workers need no shared filesystem and never touch
the run folder. A worker that dies fails that session
only (:data:`WORKER_LOST`); the others go on.

Ray is imported here only, and this module only when the ray backend is asked for.
"""

from __future__ import annotations

import logging
import socket
from pathlib import Path
from typing import Any

from mas.library.lab.executors import Play, SessionExecutor, SessionResult
from mas.library.lab.executors._ray_worker import (
    CacheKeeper,
    FlavourBundle,
    RemoteJob,
    folder_files,
    play_remote,
    plugin_inventory,
)
from mas.library.lab.executors.ray_reaper import start_reaper, stop_reaper
from mas.library.lab.sessions import SessionJob
from mas.runtime.errors import MasError
from mas.runtime.spec.experiment import Runner

log = logging.getLogger(__name__)

WORKER_LOST = "the Ray worker running this session was lost"
"""Start of the error recorded for a session whose worker died or whose node went away."""

CHECK_TIMEOUT = 120.0
"""Seconds every node has to answer the plugin check."""

CONNECT_TIMEOUT = 10.0
"""Seconds the cluster's address has to accept a TCP connection before Ray is asked."""


def import_ray() -> Any:
    """The ``ray`` module.

    :raises MasError: Ray is not installed (with the command that installs it).
    """
    try:
        import ray
    except ImportError:
        raise MasError("--backend ray needs Ray: pip install 'mas-library-lab[ray]'") from None
    return ray


class RayExecutor(SessionExecutor):
    """One Ray task per session; at most ``max_concurrency`` in flight.

    :param runner: ``address`` (``None``: the cluster of the Ray job this runs in, else the
        one ``ray start`` began on this machine, else a new instance here; ``auto``,
        ``host:port``, ``ray://host:port`` as for ``ray.init``) and ``num_cpus_per_session``.
    """

    def __init__(self, play: Play, max_concurrency: int, runner: Runner) -> None:
        self.capacity = max_concurrency
        self._ray = ray = import_ray()
        # A driver that is already connected (a test, a notebook) keeps its connection.
        self._connected_here = not ray.is_initialized()
        if self._connected_here:
            problem = unreachable(runner.address)
            if problem:
                raise MasError(f"--address {runner.address}: {problem}")
            try:
                ray.init(address=runner.address, include_dashboard=False,
                         logging_level=logging.WARNING)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                where = f"--address {runner.address}" if runner.address else "ray"
                raise MasError(f"{where}: cannot join or start a Ray cluster: {exc}") from None
        # An instance ray.init started here must not outlive the driver, even killed
        # (ray_reaper); a cluster joined has no processes below this one, and no reaper.
        self._reaper = start_reaper() if self._connected_here else None
        self._play = ray.put(play)
        self._task = ray.remote(play_remote).options(
            num_cpus=runner.num_cpus_per_session, max_retries=0)
        self._bundles: dict[str, Any] = {}
        self._keepers: dict[Path, Any] = {}
        self._running: dict[Any, int] = {}
        try:
            check_cluster(ray, cpus=runner.num_cpus_per_session)
        except BaseException:
            self.close()
            raise

    def submit(self, key: int, job: SessionJob) -> None:
        """Send ``job`` as a task, with what its folder already holds (a resumed session)."""
        remote = RemoteJob(job.experiment, job.item, job.run_index, job.seed, job.session_id,
                           folder_files(job.folder))
        ref = self._task.remote(self._play, remote, self._bundle(job))
        self._running[ref] = key

    def next_done(self) -> tuple[int, SessionResult]:
        """The first task to end; a lost worker becomes that session's error."""
        ray = self._ray
        ready, _ = ray.wait(list(self._running), num_returns=1)
        key = self._running.pop(ready[0])
        try:
            result: SessionResult = ray.get(ready[0])
        except ray.exceptions.RayTaskError as exc:
            # The session's own errors are caught by play on the worker; this is the task
            # around it (rebuilding the flavour, unpacking its files).
            cause = exc.cause
            result = SessionResult(f"the session task failed on its worker: "
                                   f"{type(cause).__name__}: {cause}", 0.0)
        except ray.exceptions.RayError as exc:
            lines = str(exc).strip().splitlines()
            result = SessionResult(f"{WORKER_LOST}: {type(exc).__name__}: "
                                   f"{lines[0] if lines else ''}", 0.0)
        return key, result

    def cancel(self) -> None:
        """Cancel every task still queued or running."""
        for ref in self._running:
            self._ray.cancel(ref, force=True)
        self._running.clear()

    def close(self) -> None:
        """Stop the cache keepers and disconnect (which stops an instance ``ray.init`` started),
        then let the reaper make sure that instance is gone."""
        for keeper in self._keepers.values():
            self._ray.kill(keeper)
        self._keepers.clear()
        if self._connected_here:
            self._ray.shutdown()
        stop_reaper(self._reaper)
        self._reaper = None

    def _bundle(self, job: SessionJob) -> Any:
        """The flavour's bundle in the object store, put there once per flavour."""
        name = job.flavour.name
        if name not in self._bundles:
            manifests = job.flavour.manifests
            files = {index: agent_files(loaded.path.parent,
                                        loaded.agent.spec.context_sources.skills_dir)
                     for index, loaded in enumerate(manifests.agents)}
            bundle = FlavourBundle(name, manifests, files, self._cache_for(manifests))
            self._bundles[name] = self._ray.put(bundle)
        return self._bundles[name]

    def _cache_for(self, manifests: Any) -> tuple[Any, str, bool] | None:
        """The keeper of the Infra's response cache on this node, when the Infra enables one."""
        infra = manifests.infra.spec if manifests.infra else None
        if infra is None or not infra.cache.enabled:
            return None
        path = Path(infra.cache.path).resolve()  # the keeper's working folder is not ours
        if path not in self._keepers:
            ray = self._ray
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(),
                                                  soft=False)
            self._keepers[path] = ray.remote(CacheKeeper).options(
                num_cpus=0, scheduling_strategy=here).remote(str(path), infra.cache.strict)
        return self._keepers[path], infra.cache.path, infra.cache.strict


def unreachable(address: str | None, timeout: float = CONNECT_TIMEOUT) -> str:
    """Why ``host:port`` (or ``ray://host:port``) cannot be a Ray cluster (``""``: it may be).

    ``ray.init`` retries a dead address for minutes; a plain TCP connect says at once that
    nothing listens there. ``auto``, ``local`` and no address are left to Ray.
    """
    if not address or address in ("auto", "local"):
        return ""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return "expected auto, host:port or ray://host:port"
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        return f"no Ray cluster answers there ({exc.strerror or type(exc).__name__})"
    return ""


def agent_files(home: Path, skills_dir: str) -> dict[str, bytes]:
    """The files a session reads beside an agent manifest (its skills), by relative path."""
    return {f"{skills_dir}/{name}": data
            for name, data in folder_files(home / skills_dir).items()}


def check_cluster(ray: Any, wanted: dict[str, str] | None = None, cpus: float = 0.0) -> None:
    """Every alive node answers with the plugins it loads; each must match the driver's.

    :param wanted: the driver's plugins (default: what :func:`plugin_inventory` finds here).
    :param cpus: what one session task asks for; some node must have that many.
    :raises MasError: a node lacks a plugin, has another version of it, cannot load the
        lab, or does not answer within :data:`CHECK_TIMEOUT` seconds; or no node has
        ``cpus`` CPUs (the tasks would wait for ever).
    """
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    wanted = plugin_inventory() if wanted is None else wanted
    nodes = [node for node in ray.nodes() if node.get("Alive")]
    largest = max((float(node.get("Resources", {}).get("CPU", 0)) for node in nodes), default=0)
    if cpus > largest:
        raise MasError(f"num_cpus_per_session: {cpus:g} CPUs per session, but the largest node "
                       f"of the Ray cluster has {largest:g}; lower it")
    probe = ray.remote(plugin_inventory)
    refs = {probe.options(num_cpus=0, max_retries=0, scheduling_strategy=(
        NodeAffinitySchedulingStrategy(node["NodeID"], soft=False))).remote():
        node.get("NodeManagerAddress", node["NodeID"]) for node in nodes}
    problems = []
    for ref, where in refs.items():
        try:
            found = ray.get(ref, timeout=CHECK_TIMEOUT)
        except ray.exceptions.GetTimeoutError:
            problems.append(f"node {where}: did not answer the plugin check in "
                            f"{CHECK_TIMEOUT:.0f} s")
            continue
        except ray.exceptions.RayError as exc:
            cause = getattr(exc, "cause", None) or exc
            first = str(cause).strip().splitlines()
            problems.append(f"node {where}: cannot load the lab's plugins: "
                            f"{type(cause).__name__}: {first[-1] if first else ''}")
            continue
        for name, dist in sorted(wanted.items()):
            if name not in found:
                problems.append(f"node {where}: plugin {name!r} ({dist}) is not installed")
            elif found[name] != dist:
                problems.append(f"node {where}: plugin {name!r} is {found[name]}, the driver "
                                f"has {dist}")
    if problems:
        raise MasError("the Ray cluster cannot run these sessions: " + "; ".join(problems)
                       + ". Install the same distributions and plugins on every node "
                       "(docs/lab.md, 'Running on a Ray cluster')")
    log.info("ray: %d node(s), plugins %s", len(nodes), ", ".join(sorted(wanted)))
