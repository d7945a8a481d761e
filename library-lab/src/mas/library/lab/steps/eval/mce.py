"""``eval_mce``: score every session run folder with the MCE jury (mas-library-eval).

The judge model follows spec 000's order: this step's ``config.model`` /
``config.judge_model``, ``experiment.evaluation.model``, ``evaluation.config.model``,
template vars, ``models.judge``, ``models.main`` / ``model``, the concrete models written in
the applications' ``spec.models[]`` (never their resolved turn models),
``metadata.model_name``, then the local and package defaults. It is logged here as
``judge model=… source=…`` and stored as ``judge_model`` / ``judge_model_source`` on the
step metadata. Each session's ``metrics.json`` is written in its run folder.
"""

from __future__ import annotations

import logging
from typing import Any

from mas.library.eval import EvalConfig, backend_line, evaluate_runs, judge_scope, runs_summary
from mas.library.lab.rundir import write_json
from mas.library.lab.steps import StepContext
from mas.runtime.protocols import StepResult
from mas.runtime.spec.experiment import StepSpec

log = logging.getLogger(__name__)


class EvalMce:
    """Score the sessions; writes ``eval/<step>.json`` and each session's ``metrics.json``."""

    def __init__(self, params: EvalConfig, spec: StepSpec) -> None:
        self.params = params
        self.name = spec.step_name

    def outputs(self, ctx: StepContext) -> list[str]:
        """``eval/<step name>.json``."""
        return [f"eval/{self.name}.json"]

    def run(self, ctx: StepContext) -> StepResult:
        """Resolve the judge, score every run folder, record the judge on the metadata."""
        rows = ctx.sessions()
        experiment = ctx.experiment
        # Step 7 reads the applications as written, never their resolved turn models.
        manifests = experiment.base if experiment else None
        overwrite = self.params.overwrite or ctx.overwrite
        config = self.params.model_copy(update={"overwrite": overwrite})
        scope = judge_scope(config, manifests)
        engine = self._engine(ctx)
        report = evaluate_runs(ctx.runtime, [ctx.path(r["folder"]) for r in rows], config,
                               engine=engine, scope=scope)
        metadata = {**report.metadata, "judge_calls": engine.ledger.llm_calls,
                    "judge_cost": engine.ledger.cost}
        log.info("judge model=%s source=%s", metadata.get("judge_model"),
                 metadata.get("judge_model_source"))
        output = self.outputs(ctx)[0]
        write_json(ctx.path(output), {
            "step": self.name, "metadata": metadata,
            "runs": [{"path": ctx.run.relative(o.path), "status": o.status, "scored": o.scored,
                      "quality": o.quality, "error": o.error} for o in report.runs],
        })
        return StepResult([output], metadata, f"judge {metadata.get('judge_model')} "
                          f"({metadata.get('judge_model_source')}), {backend_line(metadata)}; "
                          f"{runs_summary(metadata)}")

    def _engine(self, ctx: StepContext) -> Any:
        """The engine judge calls go through: the applications' infra (endpoint, key,
        pricing, cache) when the experiment is loaded, else the plain engine."""
        from mas.runtime.engine import Engine
        from mas.runtime.session import engine_for

        session_id = f"lab-{self.name}"
        if ctx.experiment is None or not ctx.experiment.flavours:
            return Engine(ctx.runtime, session_id=session_id)
        flavour = ctx.experiment.flavours[0]
        engine = engine_for(ctx.runtime, flavour.agent, flavour.manifests, session_id=session_id)
        engine.max_llm_calls = None  # an agent's per-session budget does not bound the jury
        return engine
