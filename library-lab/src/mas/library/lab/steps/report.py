"""``report``: ``report.html``, ``plots/*.svg``, the table's CSV / JSON exports, a timeline
page per session (when the kernel can write one) and the plugins used, into ``run.json``."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from mas.library.lab.provenance import distributions, record_plugins
from mas.library.lab.report.export import table_rows, to_csv
from mas.library.lab.report.html import render_html
from mas.library.lab.report.plots import all_plots, cost_metric
from mas.library.lab.report.result import degraded_flavours, findings, result_section
from mas.library.lab.report.sections import (
    FlavourInfo,
    claims_section,
    flavours_section,
    package_versions,
    session_folders,
    sessions_section,
)
from mas.library.lab.report.timeline import timeline_writer, write_timelines
from mas.library.lab.rundir import read_json, write_json, write_text
from mas.library.lab.steps import (
    REPORT_FILE,
    RESULT_FILE,
    RESULTS_FILE,
    TRAJECTORIES_FILE,
    StepContext,
)
from mas.library.lab.steps.trajectories import read_trajectories
from mas.runtime.errors import MasError
from mas.runtime.protocols import StepResult
from mas.runtime.registry import NoParams
from mas.runtime.spec.experiment import StepSpec
from mas.runtime.spec.yaml_io import read_yaml_documents

TABLE_CSV = "results_table.csv"
TABLE_JSON = "results_table.json"
OFFLINE_PREFIX = "offline/"


def flavour_infos(ctx: StepContext, trajectories: list[dict[str, Any]]) -> list[FlavourInfo]:
    """What each flavour ran with: from the loaded experiment, else (``mas-ctl lab report``
    re-rendering a run folder) from its compiled manifests and session transcripts."""
    if ctx.experiment is None:
        return [info for flavour in dict.fromkeys(t["flavour"] for t in trajectories)
                if (info := _stored_flavour(ctx, flavour, trajectories)) is not None]
    base = _base_binding(ctx)
    found = []
    for flavour in ctx.experiment.flavours:
        agent = flavour.agent
        summarizer = agent.summarizer_model
        found.append(FlavourInfo(base=_compared_with(ctx, base, agent.binding.type),
            name=flavour.name, context_manager=agent.binding.type,
            params=agent.params.model_dump(mode="json"), turn_model=agent.turn_model.model,
            turn_model_source=agent.turn_model.source,
            summarizer_model=summarizer.model if summarizer else None,
            summarizer_model_source=summarizer.source if summarizer else None))
    return found


def _base_binding(ctx: StepContext) -> tuple[str, dict[str, Any]] | None:
    """The base agent's context manager type and params, defaults filled in; ``None`` when
    the experiment has no single base agent or its params do not validate."""
    base = ctx.experiment.base if ctx.experiment else None
    if base is None or len(base.agents) != 1:
        return None
    binding, _ = base.agents[0].agent.spec.effective_context_manager()
    try:
        params = ctx.runtime.registries.context_manager.get(binding.type).validate_params(
            binding.params)
    except (MasError, ValidationError):
        return None
    return binding.type, params.model_dump(mode="json")


def _compared_with(ctx: StepContext, base: tuple[str, dict[str, Any]] | None,
                   kind: str) -> tuple[str, dict[str, Any]] | None:
    """What a flavour of context manager ``kind`` is shown against: the base agent's params,
    or, when the flavour switches strategy, the defaults of its own (``None``: unknown)."""
    if base is None or base[0] == kind:
        return base
    try:
        defaults = ctx.runtime.registries.context_manager.get(kind).validate_params({})
    except (MasError, ValidationError):
        return None
    return base[0], defaults.model_dump(mode="json")


def _stored_flavour(ctx: StepContext, flavour: str,
                    trajectories: list[dict[str, Any]]) -> FlavourInfo | None:
    """A flavour as the run folder recorded it; ``None`` when its manifest is missing."""
    compiled = sorted(ctx.path(f"manifests/{flavour}").glob("*.yaml"))
    if not compiled:
        return None
    documents = read_yaml_documents(compiled[0])
    document = documents[0] if isinstance(documents[0], dict) else {}
    spec = document.get("spec") or {}
    binding = spec.get("context_manager") or {}
    params = binding.get("params") or {}
    summarizer = (params.get("summarizer") or {}) if isinstance(params.get("summarizer"), dict) \
        else {}
    folder = next((t.get("folder") for t in trajectories if t["flavour"] == flavour), None)
    transcript = read_json(ctx.path(f"{folder}/transcript.json")) if folder else None
    model = transcript.get("model") if isinstance(transcript, dict) else None
    summarizer_model = (summarizer.get("params") or {}).get("model")
    return FlavourInfo(
        name=flavour, context_manager=str(binding.get("type", "?")), params=params,
        turn_model=str(model or "?"), turn_model_source="the sessions' transcript.json",
        summarizer_model=summarizer_model,
        summarizer_model_source="compiled manifest" if summarizer_model else None)


def cost_labels(results: dict[str, Any], flavours: list[FlavourInfo]) -> tuple[str, str, str]:
    """(table row label, plot axis title, note) saying what the cost column is."""
    if cost_metric(results) == "PromptTokens":
        return ("cost USD", "mean prompt tokens per session (every call was free)",
                "Every model call in this run was free, so cost is 0 for every flavour; the "
                "headline plot uses prompt tokens instead.")
    offline = bool(flavours) and all(f.turn_model.startswith(OFFLINE_PREFIX) for f in flavours)
    if offline:
        return ("cost USD (offline model at hosted rates)",
                "mean cost per session, USD (offline model priced at hosted rates)",
                "Cost: the offline model answered every call here; its tokens are priced at a "
                "hosted model's list rates (the Infra's generation.pricing), so the cost shows "
                "what these sessions would cost there, not money spent.")
    return "cost USD", "mean cost per session (USD)", ""


class Report:
    """Write ``report.html``, ``plots/*.svg`` and the table exports from ``results.json``."""

    def __init__(self, params: NoParams, spec: StepSpec) -> None:
        self.params = params

    def outputs(self, ctx: StepContext) -> list[str]:
        """``report.html``."""
        return [REPORT_FILE]

    def run(self, ctx: StepContext) -> StepResult:
        """Render the plots, the exports and the page."""
        results = read_json(ctx.path(RESULTS_FILE))
        if not isinstance(results, dict):
            raise MasError(f"{ctx.path(RESULTS_FILE)}: missing or unreadable; run aggregate first")
        trajectories = read_trajectories(ctx.path(TRAJECTORIES_FILE))
        flavours = flavour_infos(ctx, trajectories)
        row_label, axis_label, cost_note = cost_labels(results, flavours)
        degraded = degraded_flavours(results)
        plots = all_plots(results, trajectories, axis_label, degraded)
        written = [ctx.run.relative(write_text(ctx.path(f"plots/{name}"), svg))
                   for name, svg in plots.items()]
        rows = table_rows(results)
        written.append(ctx.run.relative(write_text(ctx.path(TABLE_CSV), to_csv(rows))))
        written.append(ctx.run.relative(write_json(ctx.path(TABLE_JSON), rows)))
        notes = [cost_note] if cost_note else []
        if "context_fill.svg" not in plots:
            notes.append("No session recorded its context fill: no context-fill plot.")
        folders = session_folders(trajectories)
        timelines, timeline_note = write_timelines(
            ctx.run.path, sorted(set(folders.values())), timeline_writer())
        if timeline_note:
            notes.append(timeline_note)
        written.extend(sorted(timelines.values()))
        plugins = distributions(record_plugins(ctx.run, ctx.runtime))
        found = findings(results)
        page = render_html(
            ctx.run.info, results, plots, notes, cost_label=row_label,
            claims=claims_section(results.get("claims") or [], folders),
            flavours_html=flavours_section(flavours, package_versions(), plugins),
            sessions_html=sessions_section(trajectories, results["flavours"], timelines),
            exports=(TABLE_CSV, TABLE_JSON, RESULTS_FILE),
            result=result_section(found, plots.get("pareto.svg")))
        write_text(ctx.path(REPORT_FILE), page)
        written.append(ctx.run.relative(write_text(
            ctx.path(RESULT_FILE), "".join(f"{f.text}\n" for f in found))))
        return StepResult([REPORT_FILE, *written],
                          {"plots": sorted(plots), "timelines": len(timelines),
                           "separated": sum(f.separated for f in found)},
                          f"report.html with {len(plots)} plot(s), {len(timelines)} timeline "
                          "page(s)")
