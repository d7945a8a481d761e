"""Hook implementations of mas-library-lab (entry point ``lab``).

Registers the stock pipeline steps and ``mas-ctl lab``, and lends ``mas-ctl validate`` the
lab's pre-run checks of an experiment file. Step modules load when a step is
built, so registering costs nothing at start-up.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mas.library.lab.steps.aggregate import AggregateParams
from mas.library.lab.steps.sessions import RunSessionsParams
from mas.runtime import hookimpl
from mas.runtime.errors import Problem
from mas.runtime.registry import KindRegistry
from mas.runtime.runtime import Runtime
from mas.runtime.spec.loader import ManifestSet


def _run_sessions(params: Any, spec: Any) -> Any:
    from mas.library.lab.steps.sessions import RunSessions

    return RunSessions(params, spec)


def _extract_trajectories(params: Any, spec: Any) -> Any:
    from mas.library.lab.steps.trajectories import ExtractTrajectories

    return ExtractTrajectories(params, spec)


def _eval_mce(params: Any, spec: Any) -> Any:
    from mas.library.lab.steps.eval.mce import EvalMce

    return EvalMce(params, spec)


def _aggregate(params: Any, spec: Any) -> Any:
    from mas.library.lab.steps.aggregate import Aggregate

    return Aggregate(params, spec)


def _report(params: Any, spec: Any) -> Any:
    from mas.library.lab.steps.report import Report

    return Report(params, spec)


@hookimpl
def mas_register_lab_steps(registry: KindRegistry) -> None:
    """Register run_sessions, extract_trajectories, eval_mce, aggregate and report."""
    from mas.library.eval import EvalConfig

    registry.register("run_sessions", _run_sessions, params=RunSessionsParams,
                      description="run flavours x items x n_runs (resumable); sessions.json")
    registry.register("extract_trajectories", _extract_trajectories,
                      description="per-session context fill, usage, probes; trajectories.jsonl")
    registry.register("eval_mce", _eval_mce, params=EvalConfig,
                      description="score every session with the MCE jury; metrics.json each")
    registry.register("aggregate", _aggregate, params=AggregateParams,
                      description="per-flavour means with 95% CIs, claims; results.json")
    registry.register("report", _report, description="report.html with the table and SVG plots")


@hookimpl
def mas_check_manifests(runtime: Runtime, manifests: ManifestSet,
                        config: Path | None) -> list[Problem] | None:
    """For an experiment file: every check ``lab run`` runs before its first session."""
    if manifests.experiment_path is None:
        return None
    from mas.library.lab.experiment import check_experiment

    return check_experiment(runtime, manifests.experiment_path, config=config)


@hookimpl
def mas_register_cli_commands(registry: KindRegistry) -> None:
    """Register ``mas-ctl lab``."""
    registry.register("lab", _lab_group, description="run experiments, report on them, list runs")


def _lab_group() -> Any:
    from mas.library.lab.cli import lab_group

    return lab_group
