"""``run_sessions``: every flavour x item x run, resumably; writes ``sessions.json``."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from mas.library.lab.rundir import read_json, write_json
from mas.library.lab.runner import plan_jobs, run_grid, write_compiled_manifests
from mas.library.lab.sessions import default_session_function
from mas.library.lab.steps import SESSIONS_FILE, StepContext
from mas.runtime.degradation import DEGRADED
from mas.runtime.errors import MasError
from mas.runtime.protocols import StepResult
from mas.runtime.spec.experiment import StepSpec


class RunSessionsParams(BaseModel):
    """``config`` of ``run_sessions``."""

    model_config = ConfigDict(extra="forbid")

    max_concurrency: int | None = Field(
        default=None, ge=1, description="Sessions in flight; default: --max-concurrency."
    )


class RunSessions:
    """Run the session grid; a failed session is recorded and the others go on."""

    def __init__(self, params: RunSessionsParams, spec: StepSpec) -> None:
        self.params = params

    def outputs(self, ctx: StepContext) -> list[str]:
        """``sessions.json``, written once every session has a record.

        An index that lists degraded or failed sessions does not count as done: the next
        pass runs those sessions again (failed ones resume from their saved turns).
        """
        index = read_json(ctx.path(SESSIONS_FILE), {}) or {}
        return [] if index.get("degraded") or index.get("failed") else [SESSIONS_FILE]

    def run(self, ctx: StepContext) -> StepResult:
        """Write the compiled manifests, run unfinished sessions, index them all."""
        experiment = ctx.need_experiment()
        manifests = write_compiled_manifests(experiment, ctx.run)
        jobs = plan_jobs(experiment, ctx.run, ctx.runtime)
        session = ctx.session_function or default_session_function()
        concurrency = self.params.max_concurrency or ctx.max_concurrency
        records = run_grid(jobs, session, max_concurrency=concurrency, overwrite=ctx.overwrite,
                           stream=ctx.stream, root=ctx.run.path,
                           runner=ctx.runner)
        for record in records:
            record.folder = ctx.run.relative(Path(record.folder))
        failed = [r for r in records if r.status == "failed"]
        if records and len(failed) == len(records):
            # No index: the step stays unfinished, and the next pass reports this again.
            raise MasError(f"all {len(records)} sessions failed; first error: {failed[0].error}")
        degraded = [r for r in records if r.status == DEGRADED]
        write_json(ctx.path(SESSIONS_FILE), {"sessions": [asdict(r) for r in records],
                                             "failed": len(failed), "degraded": len(degraded)})
        return StepResult(
            outputs=[SESSIONS_FILE, *manifests],
            metadata={"sessions": len(records), "failed": len(failed),
                      "degraded": len(degraded)},
            message=f"{len(records)} session(s), {len(failed)} failed, "
                    f"{len(degraded)} degraded",
        )
