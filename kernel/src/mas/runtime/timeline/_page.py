"""The timeline page: one self-contained HTML document (inline style, script and data)."""

from __future__ import annotations

import json
from html import escape
from typing import Any

from mas.runtime.timeline._script import SCRIPT
from mas.runtime.timeline._style import STYLE

_HEADER_FIELDS = ("agent", "model", "session_id", "status")
"""Session metadata shown in the header: names and ids the manifest or the run chose."""


def render_page(data: dict[str, Any], session: dict[str, Any]) -> str:
    """The HTML of the timeline of ``data`` (from :func:`timeline_data`).

    :param session: the saved session view (``context_usage`` of ``session.json``), for the
        header; only :data:`_HEADER_FIELDS` are read from it, and ``{}`` is fine.
    """
    meta = [
        f"{name.replace('_', ' ')} {escape(str(session[name]))}"
        for name in _HEADER_FIELDS if isinstance(session.get(name), (str, int))
    ]
    # Inside <script>, "</" could close the element early; JSON allows "<\/" for it.
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    title = f"Session timeline — {escape(str(session.get('agent', 'session')))}"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{STYLE}</style></head>
<body>
<header><h1>{title}</h1><p class="meta">{" · ".join(meta)}</p></header>
<section id="summary" aria-label="session totals"></section>
<main>
<div id="plots">
<div id="legend"></div>
<canvas id="bars" role="img" aria-label="tokens of every model request, stacked by part,
 against the window, the hard budget and the trigger"></canvas>
<p class="caption">Each column is one model request (where requests are thinner than a
 pixel, the fullest of those sharing the column). Lines: the model's window, the hard
 budget and the soft trigger.</p>
<canvas id="marks" role="img" aria-label="compactions, recalls, pruning passes and
 degradations along the session"></canvas>
<p class="caption">▲ compaction (green: at a turn boundary, orange: inside a turn, red:
 failed) · ● recall · ■ pruning pass · ◆ degradation. Each sits before the request it
 preceded.</p>
<canvas id="shares" role="img" aria-label="committed history's share sent, summarized,
 dropped and cut on every request"></canvas>
<div id="legend-shares" class="caption">Committed history on each request, by tokens:
 <span id="share-legend"></span></div>
<div id="cursor"></div>
</div>
<aside id="detail" aria-live="polite"></aside>
<div class="tables"><h2>Compactions</h2><table id="compactions"></table>
<p class="note">Numbers and names only: this page never holds prompt, reply or tool
 text.</p></div>
</main>
<script type="application/json" id="timeline-data">{payload}</script>
<script>{SCRIPT}</script>
</body></html>
"""
