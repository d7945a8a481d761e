"""Scoring session runs: configure the jury, bind metrics, write one metrics.json per run.

A lab ``eval_mce`` step is one call::

    config = EvalConfig.model_validate(step.config)
    report = evaluate_runs(runtime, run_dirs, config, engine=engine,
                           scope=judge_scope(config, manifests))
    step_metadata.update(report.metadata)   # judge_model, judge_model_source, ...

Re-scoring never re-runs an agent: it reads the stored record. A run whose metrics.json
already holds every requested id is skipped unless ``overwrite``; missing ids are added,
and so are stock ids that the other backend computed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from mas.library.eval.mce._prompt import render_material
from mas.library.eval.mce.config import EvalConfig
from mas.library.eval.mce.isolated import (
    BackendChoice,
    MceBackendError,
    MceWorker,
    choose_backend,
)
from mas.library.eval.mce.jury import JudgeModel, Jury, aggregate
from mas.library.eval.metrics.base import JudgeMetric, Metric, MetricResult, direction_of
from mas.library.eval.metrics.judge import STOCK_JUDGES
from mas.library.eval.metrics.select import bind_metrics
from mas.library.eval.output import MetricsFile, MetricsFileError, ScoredMetric
from mas.library.eval.run import RunFolderError, SessionRun, load_run
from mas.runtime.errors import MasError
from mas.runtime.protocols import ChatEngine
from mas.runtime.runtime import Runtime
from mas.runtime.spec.model_ref import JudgeScope, resolve_model

log = logging.getLogger(__name__)

MCE_IDS = frozenset(stock.mce_id for stock in STOCK_JUDGES)
"""The stock judge ids ``backend: mce`` hands to MCE's own metric classes."""


def configure_jury(
    runtime: Runtime, engine: ChatEngine, config: EvalConfig, scope: JudgeScope
) -> Jury:
    """Resolve the panel (spec 000's chain for the primary judge) and log it.

    :raises ModelResolutionError: no concrete judge model anywhere in the chain.
    """
    primary = resolve_model(runtime, "", "judge", scope)
    judges = [JudgeModel(primary.model, primary.source)]
    for index, ref in enumerate(config.panel):
        choice = resolve_model(runtime, ref, "judge", scope)
        source = f"eval_mce.config.panel[{index}]" if choice.source == "override" else \
            choice.source
        judges.append(JudgeModel(choice.model, source))
    jury = Jury(
        engine=engine, judges=judges, samples=config.samples, seed=config.seed,
        temperature=config.temperature, max_tokens=config.max_tokens,
        json_mode=config.json_mode, max_concurrency=config.max_concurrency,
        max_tool_chars=config.max_tool_chars,
    )
    log.info(
        "MCE Jury configured (model=%s, source=%s, panel=%s, samples=%d, temperature=%s, "
        "seed=%s, max_concurrency=%d)",
        primary.model, primary.source, ",".join(j.model for j in judges), config.samples,
        config.temperature, config.seed, config.max_concurrency,
    )
    return jury


def jury_metadata(jury: Jury) -> dict[str, Any]:
    """``judge_model``, ``judge_model_source``, the panel and what every request sends."""
    return {
        "judge_model": jury.judges[0].model,
        "judge_model_source": jury.judges[0].source,
        "judges": [asdict(judge) for judge in jury.judges],
        **jury.sent(),
    }


RUN_STATUSES = ("scored", "unscored", "skipped", "failed")
"""What a scoring pass did to a run folder (:attr:`RunOutcome.status`), in report order."""


@dataclass
class RunOutcome:
    """What scoring did to one run folder.

    :ivar status: ``scored`` (this pass wrote ids, some with a value), ``unscored`` (it
        wrote ids and none got a value: every judge vote failed), ``skipped`` (already
        scored) or ``failed`` (unreadable).
    :ivar scored: ids (re)written by this pass, with or without a value.
    :ivar quality: the file's ``run_quality`` after this pass.
    """

    path: Path
    status: Literal["scored", "unscored", "skipped", "failed"]
    scored: list[str] = field(default_factory=list)
    quality: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


@dataclass
class EvalReport:
    """Everything one scoring pass did; ``metadata`` goes on the ``eval_mce`` step."""

    metadata: dict[str, Any]
    runs: list[RunOutcome]


def evaluate_runs(
    runtime: Runtime,
    run_dirs: Iterable[Path | str],
    config: EvalConfig,
    *,
    engine: ChatEngine | None,
    scope: JudgeScope,
    metrics: list[Metric] | None = None,
) -> EvalReport:
    """Score every run folder in ``run_dirs`` and write its metrics.json.

    :param engine: the engine judge calls go through; ``None`` is allowed when no judge
        metric is selected.
    :param metrics: already-bound metrics; default: bound from ``config``.
    :raises ManifestError: bad metric ids or prompt metrics (before anything is scored).
    """
    metrics = metrics if metrics is not None else bind_metrics(
        runtime, config.metrics, config.prompt_metrics, location="config")
    jury: Jury | None = None
    jury_error: str | None = None
    metadata: dict[str, Any] = {"judge_model": None, "judge_model_source": None}
    if any(isinstance(metric, JudgeMetric) for metric in metrics):
        try:
            if engine is None:
                raise MasError("no engine to send judge requests through")
            jury = configure_jury(runtime, engine, config, scope)
            metadata = jury_metadata(jury)
        except MasError as exc:
            jury_error = f"no jury: {exc}"
            log.error("%s", jury_error)
            metadata["judge_error"] = jury_error
    with ExitStack() as stack:
        mce = None
        choice = BackendChoice("native", "no stock MCE id to score")
        if jury is not None and any(m.id in MCE_IDS for m in metrics):
            choice = choose_backend(config.backend, config.mce_python)
            mce, choice = _start_worker(choice, stack)
        if mce is not None:
            metadata.update(mce_version=mce.mce_version, mce_versions=mce.versions)
            log.info("MCE backend: worker %s, metrics-computation-engine %s", mce.python,
                     mce.mce_version)
        elif choice.auto:
            # Nobody asked for native: the stock ids are not MCE's own here, and the user
            # must know it (once per scoring pass, visible without -v).
            log.warning("the stock MCE ids are scored by mas-lab's rubrics (native), not by "
                        "MCE's own classes: %s (make mce-venv)", choice.reason)
        metadata.update(backend=choice.name, backend_reason=choice.reason)
        outcomes = [_score_path(Path(path), metrics, jury, jury_error, config.overwrite, mce,
                                backend=choice.name)
                    for path in run_dirs]
    metadata["metrics"] = [metric.id for metric in metrics]
    for status in RUN_STATUSES:
        metadata[f"runs_{status}"] = sum(1 for o in outcomes if o.status == status)
    return EvalReport(metadata=metadata, runs=outcomes)


def backend_line(metadata: dict[str, Any]) -> str:
    """Who scored the stock ids of a pass, from its metadata: ``MCE 1.2.9`` (MCE's own
    metric classes, with the version) or ``native rubrics`` (mas-lab's)."""
    if metadata.get("mce_version"):
        return f"MCE {metadata['mce_version']}"
    return "native rubrics"


def runs_summary(metadata: dict[str, Any]) -> str:
    """``15 scored, 1 unscored, 2 skipped``: the run counts of a pass (a zero is left out,
    but for ``scored``)."""
    return ", ".join(f"{metadata.get(f'runs_{status}', 0)} {status}" for status in RUN_STATUSES
                     if status == "scored" or metadata.get(f"runs_{status}"))


def _start_worker(choice: BackendChoice,
                  stack: ExitStack) -> tuple[MceWorker | None, BackendChoice]:
    """The MCE worker of ``choice`` (entered on ``stack``; ``None`` for native) and the
    backend that scores: an automatic ``mce`` whose worker does not start (a half-built
    venv) becomes native, with the reason.

    :raises MceBackendError: the worker of a backend named ``mce`` does not start.
    """
    if choice.python is None:
        return None, choice
    try:
        return stack.enter_context(MceWorker(choice.python)), choice
    except MceBackendError as exc:
        if not choice.auto:
            raise
        return None, BackendChoice("native", f"its worker ({choice.python}) did not start: "
                                   f"{exc}", auto=True)


def _score_path(
    path: Path, metrics: list[Metric], jury: Jury | None, jury_error: str | None, overwrite: bool,
    mce: MceWorker | None = None, *, backend: str = "native",
) -> RunOutcome:
    try:
        run = load_run(path)
        existing = _existing(run, overwrite)
    except RunFolderError as exc:
        log.error("%s", exc)
        return RunOutcome(path, "failed", error=str(exc))
    # An id left unscored last time (its judge calls failed) is retried, as a rerun retries
    # degraded sessions.
    todo = [m for m in metrics if overwrite or existing is None or m.id not in existing.metrics
            or existing.metrics[m.id].get("status") == "unscored"
            or (jury is not None and _filed_by_other_backend(existing.metrics[m.id], m, backend))]
    if existing is not None and not todo:
        return RunOutcome(path, "skipped", quality=existing.run_quality())
    record = existing or MetricsFile(run.session_id, run.agent, run.model)
    record.warnings.extend(run.warnings)
    for scored in score_run(run, todo, jury, jury_error, mce):
        record.add(scored)
        record.warnings.extend(_warnings(scored))
    if jury is not None and any(isinstance(m, JudgeMetric) for m in todo):
        record.judge = jury_metadata(jury)
    record.write(path)
    written = {record.metrics[m.id]["status"] for m in todo}
    status: Literal["scored", "unscored"] = \
        "unscored" if "unscored" in written and "scored" not in written else "scored"
    return RunOutcome(path, status, [m.id for m in todo], record.run_quality())


def _filed_by_other_backend(record: dict[str, Any], metric: Metric, backend: str) -> bool:
    """Whether a stored stock id was computed by the backend not asked for now.

    Asking for ``--backend mce`` over runs the lab scored natively must not keep the native
    values under MCE's name; only ``backend`` decides the stock ids, the rest are native.
    """
    wanted = backend if metric.id in MCE_IDS else "native"
    return bool((record.get("detail") or {}).get("backend", "native") != wanted)


def _existing(run: SessionRun, overwrite: bool) -> MetricsFile | None:
    try:
        return MetricsFile.read(run)
    except MetricsFileError:
        if overwrite:
            return None  # --overwrite replaces a damaged metrics.json
        raise


def score_run(
    run: SessionRun, metrics: list[Metric], jury: Jury | None, jury_error: str | None = None,
    mce: MceWorker | None = None,
) -> list[ScoredMetric]:
    """Score ``run`` on ``metrics``; judge metrics go to the jury in one batch.

    With an MCE worker, the stock ids are computed by MCE's metric classes instead (their
    judge calls still go to ``jury``); every other metric is scored here as usual. Nothing
    raises for a metric: one that cannot be scored gets ``value: null`` and its error.
    """
    results: dict[str, MetricResult] = {}
    tasks: list[tuple[JudgeMetric, str]] = []
    by_mce: list[JudgeMetric] = []
    material: str | None = None
    for metric in metrics:
        missing = metric.missing_input(run)
        if missing is not None:
            results[metric.id] = MetricResult(None, error=f"skipped: {missing}",
                                              detail={"skipped": missing})
        elif isinstance(metric, JudgeMetric):
            if jury is None:
                reason = jury_error or "no jury configured"
                results[metric.id] = MetricResult(None, error=reason, detail={"skipped": reason})
                continue
            if mce is not None and metric.id in MCE_IDS:
                by_mce.append(metric)
                continue
            if material is None:
                material = render_material(run, max_tool_chars=jury.max_tool_chars)
            tasks.append((metric, material))
        else:
            results[metric.id] = _compute(metric, run)
    if tasks and jury is not None:
        for (metric, _), votes in zip(tasks, jury.vote_all(tasks), strict=True):
            results[metric.id] = aggregate(metric, votes, jury.judges)
    if by_mce and mce is not None and jury is not None:
        results.update(mce.score(run, by_mce, jury))
    for result in results.values():
        result.detail.setdefault("backend", "native")
    return [ScoredMetric(m.id, m.kind, results[m.id], direction_of(m)) for m in metrics]


def _compute(metric: Metric, run: SessionRun) -> MetricResult:
    compute = getattr(metric, "compute", None)
    if compute is None:
        return MetricResult(None, error=f"{type(metric).__name__} is neither a JudgeMetric nor "
                            "has compute(run)")
    try:
        result: MetricResult = compute(run)
    except Exception as exc:  # one broken metric must not lose the others
        log.exception("metric %s failed on %s", metric.id, run.path)
        return MetricResult(None, error=f"metric failed: {type(exc).__name__}: {exc}")
    return result


def _warnings(scored: ScoredMetric) -> list[str]:
    unverified = scored.result.detail.get("unverified_evidence") or 0
    if unverified:
        return [f"{scored.id}: {unverified} evidence quote(s) not found in the transcript"]
    return []
