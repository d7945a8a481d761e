"""Running the grid flavours x items x n_runs with bounded concurrency, resumably.

A session is finished when its run folder holds ``transcript.json``; finished sessions are
skipped, so running again resumes. A session that raises is recorded (its transcript
carries the error) and the others go on.
"""

from __future__ import annotations

import functools
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from mas.library.lab.executors import SessionExecutor, SessionResult, open_executor
from mas.library.lab.experiment import LabExperiment
from mas.library.lab.progress import Progress
from mas.library.lab.rundir import RunFolder, write_bytes, write_json, write_text
from mas.library.lab.sessions import ITEM, TRANSCRIPT, SessionFunction, SessionJob, session_seed
from mas.runtime.degradation import DEGRADED, FAILED, OK, describe_counts
from mas.runtime.paths import contained, remove_tree
from mas.runtime.runtime import Runtime
from mas.runtime.spec.experiment import Runner

log = logging.getLogger(__name__)

METRICS = "metrics.json"
"""The eval step's scores in a session folder (library-eval's ``METRICS``)."""


@dataclass
class SessionRecord:
    """One grid cell's outcome (a row of ``sessions.json``)."""

    flavour: str
    item: str
    run_index: int
    seed: int
    session_id: str
    folder: str
    status: str
    error: str | None = None
    seconds: float | None = None
    degradation: str | None = None


def plan_jobs(experiment: LabExperiment, run: RunFolder, runtime: Runtime) -> list[SessionJob]:
    """Every grid cell, flavour-major, with its seed, session id and folder."""
    jobs = []
    for flavour in experiment.flavours:
        for item in experiment.items:
            for index in range(experiment.body.n_runs):
                seed = session_seed(experiment.name, flavour.name, item.id, index)
                jobs.append(SessionJob(
                    experiment=experiment.name, flavour=flavour, item=item, run_index=index,
                    seed=seed, session_id=f"{flavour.name}-{item.id}-{index}-{seed:08x}",
                    folder=run.session_dir(flavour.name, item.id, index), runtime=runtime,
                ))
    return jobs


def write_compiled_manifests(experiment: LabExperiment, run: RunFolder) -> list[str]:
    """Write each flavour's compiled agents (``mas-ctl compile`` output) into the run folder."""
    import yaml

    from mas.runtime.cli.compile_cmd import compiled_document

    written = []
    for flavour in experiment.flavours:
        for agent in flavour.agents:
            path = run.manifest_path(flavour.name, agent.name)
            document = compiled_document(agent, flavour.manifests)
            write_text(path, yaml.safe_dump(document, sort_keys=False, allow_unicode=True))
            written.append(run.relative(path))
    return written


def run_grid(
    jobs: list[SessionJob],
    session: SessionFunction,
    *,
    max_concurrency: int = 2,
    overwrite: bool = False,
    stream: IO[str] | None = None,
    runner: Runner | None = None,
    root: Path | None = None,
) -> list[SessionRecord]:
    """Run every unfinished job; return one record per job, in job order.

    The sessions run on the executor ``runner`` names (default: threads here); this
    function is the driver either way: it keeps ``max_concurrency`` sessions in flight,
    writes what they return, records them and draws the progress bar.

    :param overwrite: run finished jobs again (their folders are emptied first).
    :param stream: where the progress bar goes (``None``: no bar).
    :param root: the lab run folder; ``overwrite`` removes only folders inside it.
    :param runner: ``experiment.runner`` with the command line's overrides.
    """
    if max_concurrency < 1:
        raise ValueError(f"max_concurrency: must be at least 1 (got {max_concurrency})")
    records: dict[int, SessionRecord] = {}
    todo = []
    for index, job in enumerate(jobs):
        status = _status(job)
        if overwrite or status == DEGRADED:
            # A degraded session is run again from scratch: its numbers were not the
            # strategy's own (docs/lab.md, "Degraded sessions").
            remove_tree(root or job.folder.parent, job.folder)
        elif status == FAILED:
            # A failed session (a full disk, a provider outage) is retried from its saved
            # turns: the failure record and any scores of it go, what it committed stays.
            for name in (TRANSCRIPT, METRICS):
                (job.folder / name).unlink(missing_ok=True)
        if (job.folder / TRANSCRIPT).is_file():
            records[index] = _record(job, None)
        else:
            todo.append((index, job))
    progress = Progress(len(jobs), done=len(records), stream=stream,
                        failed=sum(r.status == "failed" for r in records.values()))
    progress.draw()
    if todo:
        with open_executor(runner, functools.partial(_play, session=session),
                           max_concurrency) as executor:
            _drive(executor, todo, records, progress)
    progress.finish()
    return [records[i] for i in range(len(jobs))]


def _drive(executor: SessionExecutor, todo: list[tuple[int, SessionJob]],
           records: dict[int, SessionRecord], progress: Progress) -> None:
    """Feed ``executor`` up to its capacity; land and record each session as it ends."""
    waiting = list(reversed(todo))
    running: dict[int, SessionJob] = {}
    try:
        while waiting or running:
            while waiting and len(running) < executor.capacity:
                index, job = waiting.pop()
                executor.submit(index, job)
                running[index] = job
            index, result = executor.next_done()
            job = running.pop(index)
            record = _record(job, _land(job, result), result.seconds)
            records[index] = record
            progress.advance(failed=record.status == FAILED, degraded=record.status == DEGRADED)
    except BaseException:
        executor.cancel()
        raise


def _land(job: SessionJob, result: SessionResult) -> str | None:
    """Write what a remote session returned into its folder; the session's error, if any."""
    if result.files is not None:
        for relative, data in sorted(result.files.items()):
            write_bytes(contained(job.folder, job.folder / relative), data)
    if result.error is not None and not (job.folder / TRANSCRIPT).is_file():
        # A worker that died returned nothing: the driver records the failure itself.
        _write_failure(job, result.error)
    return result.error


def _play(job: SessionJob, session: SessionFunction) -> str | None:
    job.folder.mkdir(parents=True, exist_ok=True)
    write_json(job.folder / ITEM, job.item.record())
    try:
        session(job)
    except Exception as exc:  # recorded below; the other sessions go on
        log.warning("session %s failed: %s: %s", job.session_id, type(exc).__name__, exc)
        error = f"{type(exc).__name__}: {exc}"
        if not (job.folder / TRANSCRIPT).is_file():
            _write_failure(job, error)
        return error
    if not (job.folder / TRANSCRIPT).is_file():
        return "the session function wrote no transcript.json"
    return None


def _write_failure(job: SessionJob, error: str) -> None:
    """The transcript of a session that ended in ``error`` before writing its own."""
    job.folder.mkdir(parents=True, exist_ok=True)
    write_json(job.folder / ITEM, job.item.record())
    write_json(job.folder / TRANSCRIPT, {
        "session_id": job.session_id, "agent": job.agent.name,
        "model": job.agent.turn_model.model, "messages": [], "final_answer": "",
        "error": error,
    })


def _status(job: SessionJob) -> str | None:
    """The status a finished session's transcript records (``None``: none readable); a
    transcript with an error is ``failed`` whoever wrote it."""
    try:
        transcript = json.loads((job.folder / TRANSCRIPT).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(transcript, dict):
        return None
    return FAILED if transcript.get("error") else transcript.get("status")


def _record(job: SessionJob, error: str | None, seconds: float | None = None) -> SessionRecord:
    transcript: dict[str, Any] = {}
    if error is None:
        try:
            transcript = json.loads((job.folder / TRANSCRIPT).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            error = f"unreadable {TRANSCRIPT}: {exc}"
        error = error or transcript.get("error")
    saved = transcript.get("degradation") or {}
    degraded = not error and transcript.get("status") == DEGRADED
    return SessionRecord(
        flavour=job.flavour.name, item=job.item.id, run_index=job.run_index, seed=job.seed,
        session_id=job.session_id, folder=str(job.folder),
        status=FAILED if error else (DEGRADED if degraded else OK),
        error=error, seconds=round(seconds, 3) if seconds is not None else None,
        degradation=describe_counts(saved.get("counts") or {}, saved.get("reasons")) or None,
    )
