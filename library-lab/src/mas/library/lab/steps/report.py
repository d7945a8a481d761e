"""``report``: ``report.html`` with the table, the claims and the plots (also in ``plots/``)."""

from __future__ import annotations

from mas.library.lab.report.html import render_html
from mas.library.lab.report.plots import all_plots, cost_vs_score_plot
from mas.library.lab.rundir import read_json, write_text
from mas.library.lab.steps import REPORT_FILE, RESULTS_FILE, TRAJECTORIES_FILE, StepContext
from mas.library.lab.steps.trajectories import read_trajectories
from mas.runtime.errors import MasError
from mas.runtime.protocols import StepResult
from mas.runtime.registry import NoParams
from mas.runtime.spec.experiment import StepSpec


class Report:
    """Write ``report.html`` and ``plots/*.svg`` from ``results.json`` and the trajectories."""

    def __init__(self, params: NoParams, spec: StepSpec) -> None:
        self.params = params

    def outputs(self, ctx: StepContext) -> list[str]:
        """``report.html``."""
        return [REPORT_FILE]

    def run(self, ctx: StepContext) -> StepResult:
        """Render the plots and the page."""
        results = read_json(ctx.path(RESULTS_FILE))
        if not isinstance(results, dict):
            raise MasError(f"{ctx.path(RESULTS_FILE)}: missing or unreadable; run aggregate first")
        trajectories = read_trajectories(ctx.path(TRAJECTORIES_FILE))
        plots = all_plots(results, trajectories)
        written = [ctx.run.relative(write_text(ctx.path(f"plots/{name}"), svg))
                   for name, svg in plots.items()]
        notes = []
        if "cost_vs_score.svg" in plots and cost_vs_score_plot(results)[1] == "PromptTokens":
            notes.append("Every model call in this run was free (e.g. the offline model), so "
                         "cost is 0 for every flavour; the cost plot uses prompt tokens instead.")
        if "context_fill.svg" not in plots:
            notes.append("No dataset item finished in every flavour: no context-fill plot.")
        write_text(ctx.path(REPORT_FILE), render_html(ctx.run.info, results, plots, notes))
        return StepResult([REPORT_FILE, *written], {"plots": sorted(plots)},
                          f"report.html with {len(plots)} plot(s)")
