"""The parts of report.html beyond the table: flavours, claims' differences, sessions, exports.

Each function returns an HTML fragment; everything from the run is escaped. Links are
relative to the run folder (where report.html lives), so the folder can be moved or zipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from importlib import metadata
from typing import Any

from mas.library.lab.stats import format_p, format_value

DISTRIBUTIONS = ("mas-runtime", "litellm", "pluggy", "pydantic")
"""Packages whose versions the report lists besides the plugins' own distributions (the
kernel and what it computes with)."""


@dataclass
class FlavourInfo:
    """What a flavour ran with: strategy, params, models and where each model came from.

    :ivar base: the base agent's context manager type and the params the flavour's are
        compared with (the base agent's, or the defaults of the flavour's own type when it
        switches strategy), when known; the flavour table then shows only what it changes.
    """

    name: str
    context_manager: str
    params: dict[str, Any]
    turn_model: str
    turn_model_source: str
    summarizer_model: str | None = None
    summarizer_model_source: str | None = None
    extra: dict[str, str] = field(default_factory=dict)
    base: tuple[str, dict[str, Any]] | None = None


def package_versions() -> dict[str, str]:
    """Installed version of each of :data:`DISTRIBUTIONS` (``not installed`` when absent)."""
    found = {}
    for name in DISTRIBUTIONS:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def _params(params: dict[str, Any], prefix: str = "") -> list[str]:
    """``a.b: value`` lines of a nested params mapping."""
    lines = []
    for key, value in params.items():
        if isinstance(value, dict) and value:
            lines.extend(_params(value, f"{prefix}{key}."))
        else:
            lines.append(f"{prefix}{key}: {value}")
    return lines


def shared_lines(flavours: list[FlavourInfo]) -> dict[str, set[str]]:
    """Context manager -> the param lines every flavour of it shares (for two or more)."""
    by_type: dict[str, list[set[str]]] = {}
    for f in flavours:
        by_type.setdefault(f.context_manager, []).append(set(_params(f.params)))
    return {kind: set.intersection(*lines) for kind, lines in by_type.items() if len(lines) > 1}


def changes(flavour: FlavourInfo, shared: set[str]) -> list[str]:
    """The ``a.b: value`` lines ``flavour`` changes from its base (or, with no base known,
    the lines not ``shared`` by the flavours of its context manager); a new context manager
    is its first line."""
    lines = _params(flavour.params)
    if flavour.base is None:
        return [line for line in lines if line not in shared]
    base_type, compared = flavour.base
    kept = set(_params(compared))
    changed = [line for line in lines if line not in kept]
    if base_type != flavour.context_manager:
        return [f"context manager: {base_type} → {flavour.context_manager}", *changed]
    return changed


def flavours_section(flavours: list[FlavourInfo], versions: dict[str, str],
                     plugins: dict[str, dict[str, Any]] | None = None) -> str:
    """One row per flavour (strategy, what it changes, models), the distributions that gave
    the run its plugins and the other package versions.

    :param plugins: distribution -> version and types, from :func:`provenance.distributions`.
    """
    rows = []
    shared = shared_lines(flavours)
    for f in flavours:
        summarizer = (f"{escape(f.summarizer_model)} <span class='note'>"
                      f"({escape(f.summarizer_model_source or '?')})</span>"
                      if f.summarizer_model else "none (no model call)")
        params = "<br>".join(escape(line) for line in changes(f, shared.get(f.context_manager,
                                                                           set()))) or \
            "nothing (the base agent)"
        rows.append(f"<tr><td>{escape(f.name)}</td><td>{escape(f.context_manager)}</td>"
                    f"<td class='params'>{params}</td><td>{escape(f.turn_model)} <span "
                    f"class='note'>({escape(f.turn_model_source)})</span></td>"
                    f"<td>{summarizer}</td></tr>")
    packages = ", ".join(f"{escape(name)} {escape(version)}" for name, version in versions.items())
    against = ("the base agent" if any(f.base for f in flavours)
               else "what the flavours of its context manager share")
    used = "".join(f"<tr><td>{escape(name)}</td><td>{escape(str(d.get('version') or '-'))}</td>"
                   f"<td>{escape(', '.join(d.get('types') or []))}</td></tr>"
                   for name, d in (plugins or {}).items())
    plugin_table = (f"<table id='plugins'><tr><th>distribution</th><th>version</th><th>types "
                    f"this run used</th></tr>{used}</table>" if used else
                    "<p class='note'>No plugin use was recorded for this run.</p>")
    return ("<h2 id='flavours'>Flavours</h2><table><tr><th>flavour</th><th>context manager</th>"
            f"<th>changes from {against}</th><th>turn model (source)</th>"
            f"<th>summarizer model (source)</th></tr>{''.join(rows)}</table>"
            f"<h3>Plugins and their distributions</h3>{plugin_table}"
            f"<p class='note'>Other packages: {packages}.</p>")


def _session_link(session: str, flavour: str, folders: dict[tuple[str, str], str]) -> str:
    folder = folders.get((flavour, session))
    if folder is None:
        return escape(session)
    return f"<a href='{escape(folder)}/'>{escape(session)}</a>"


def claims_section(claims: list[dict[str, Any]], folders: dict[tuple[str, str], str]) -> str:
    """Each claim's verdict, effect and interval, and the per-session differences behind it."""
    parts = []
    for claim in claims:
        css = "claim-yes" if claim.get("holds") and claim.get("reliable", True) else "claim-no"
        parts.append(f"<h3 class='{css}'>{escape(claim['text'])}</h3>")
        paired = claim.get("paired")
        if paired:
            parts.append(
                f"<p class='note'>effect (mean of {escape(claim['better'])} − "
                f"{escape(claim['than'])}) {format_value(paired['effect'])}, 95% interval "
                f"[{format_value(paired['low']) if paired['low'] is not None else '-'}, "
                f"{format_value(paired['high']) if paired['high'] is not None else '-'}], "
                f"{paired['wins']} better / {paired['losses']} worse / {paired['ties']} tied, "
                f"sign test {format_p(paired['p_value'])}</p>")
        rows = [f"<tr><td>{_session_link(d['session'], claim['better'], folders)}</td>"
                f"<td class='n'>{format_value(d['better'])}</td>"
                f"<td class='n'>{format_value(d['than'])}</td>"
                f"<td class='n'>{format_value(d['difference'])}</td></tr>"
                for d in claim.get("differences") or []]
        if rows:
            parts.append(f"<details><summary>the {len(rows)} paired differences</summary>"
                         f"<table><tr><th>session (item#run)</th><th>{escape(claim['better'])}"
                         f"</th><th>{escape(claim['than'])}</th><th>difference</th></tr>"
                         f"{''.join(rows)}</table></details>")
    return "<h2 id='claims'>Claims checked against this run</h2>" + "".join(parts) if parts else ""


def sessions_section(trajectories: list[dict[str, Any]], flavours: list[str],
                     timelines: dict[str, str] | None = None) -> str:
    """Every session: a link to its folder per flavour (and to its timeline page, where
    ``timelines`` maps the folder to one), its status and headline numbers."""
    items = list(dict.fromkeys(f"{t['item']}#{t.get('run_index', 0)}" for t in trajectories))
    by_cell = {(t["flavour"], f"{t['item']}#{t.get('run_index', 0)}"): t for t in trajectories}
    head = "".join(f"<th>{escape(f)}</th>" for f in flavours)
    rows = []
    for item in items:
        cells = []
        for flavour in flavours:
            t = by_cell.get((flavour, item))
            if t is None:
                cells.append("<td>-</td>")
                continue
            recall = t.get("probe_recall")
            status = escape(str(t.get("status", "?")))
            page = (timelines or {}).get(t["folder"])
            timeline = f" · <a class='timeline' href='{escape(page)}'>timeline</a>" if page else ""
            cells.append(f"<td><a href='{escape(t['folder'])}/'>{status}</a>{timeline} · "
                         f"{t.get('turns_played', '?')} turns · ProbeRecall "
                         f"{format_value(recall) if recall is not None else '-'}</td>")
        rows.append(f"<tr><td>{escape(item)}</td>{''.join(cells)}</tr>")
    pages = (" and 'timeline' its page of every model request against the window"
             if timelines else "")
    return ("<h2 id='sessions'>Sessions</h2><p class='note'>Each status link opens the "
            f"session's run folder (transcript.json, events.jsonl, metrics.json){pages}.</p>"
            "<table><tr>"
            f"<th>item#run</th>{head}</tr>{''.join(rows)}</table>")


def session_folders(trajectories: list[dict[str, Any]]) -> dict[tuple[str, str], str]:
    """(flavour, ``item#run``) -> the session's folder relative to the run folder."""
    return {(t["flavour"], f"{t['item']}#{t.get('run_index', 0)}"): t["folder"]
            for t in trajectories if t.get("folder")}
