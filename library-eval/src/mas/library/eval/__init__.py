"""mas-library-eval: the MCE jury — LLM-as-judge metrics with MCE-compatible ids.

Score stored session runs (``transcript.json``, ``events.jsonl``, ``item.json``) and
write one ``metrics.json`` per run::

    from mas.library.eval import EvalConfig, evaluate_runs, judge_scope, find_runs

    config = EvalConfig(metrics=["GoalSuccessRate", "fact_recall"],
                        prompt_metrics=[{"id": "Politeness", "prompt": "Score 1 if ..."}])
    report = evaluate_runs(runtime, find_runs("runs/", recursive=True), config,
                           engine=engine, scope=judge_scope(config))
    report.metadata["judge_model"], report.metadata["judge_model_source"]

From the shell: ``mas-ctl eval SOURCE [--metric ID]... [--model M] [--recursive] [--json]``.
"""

from __future__ import annotations

from mas.library.eval import _needs_kernel  # noqa: F401  (first: names a missing kernel)
from mas.library.eval.mce.config import EvalConfig
from mas.library.eval.mce.judge_model import eval_steps, judge_scope, load_experiment
from mas.library.eval.mce.jury import JudgeModel, Jury, Vote, aggregate
from mas.library.eval.mce.runner import (
    RUN_STATUSES,
    EvalReport,
    RunOutcome,
    backend_line,
    configure_jury,
    evaluate_runs,
    runs_summary,
    score_run,
)
from mas.library.eval.metrics.base import ComputedMetric, JudgeMetric, Metric, MetricResult
from mas.library.eval.metrics.select import bind_metrics, catalog
from mas.library.eval.output import MetricsFile, schema
from mas.library.eval.run import RunFolderError, SessionRun, find_runs, load_run

__all__ = [
    "RUN_STATUSES",
    "ComputedMetric",
    "EvalConfig",
    "EvalReport",
    "JudgeMetric",
    "JudgeModel",
    "Jury",
    "Metric",
    "MetricResult",
    "MetricsFile",
    "RunFolderError",
    "RunOutcome",
    "SessionRun",
    "Vote",
    "aggregate",
    "backend_line",
    "bind_metrics",
    "catalog",
    "configure_jury",
    "eval_steps",
    "evaluate_runs",
    "find_runs",
    "judge_scope",
    "load_experiment",
    "load_run",
    "runs_summary",
    "schema",
    "score_run",
]
