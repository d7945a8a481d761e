"""The ContextUsageView as text for a terminal: ``mas-ctl chat``'s ``/inspect`` and the
end of ``mas-ctl run`` (``--json`` and ``mas-ctl inspect`` print the view whole)."""

from __future__ import annotations

import textwrap
from typing import Any

WIDTH = 100
"""Columns the terminal output of ``mas-ctl run`` and ``mas-ctl lab`` keeps within (JSON
documents and the files of a run folder are not wrapped)."""


def fold(text: str, width: int = WIDTH, first: str = "", rest: str = "  ") -> str:
    """``text`` wrapped to ``width`` columns, ``first`` before its first line and ``rest``
    before the others; paths and identifiers are never split (a longer one overruns)."""
    return textwrap.fill(text, width, initial_indent=first, subsequent_indent=rest,
                         break_long_words=False, break_on_hyphens=False)


def usage_lines(view: dict[str, Any]) -> list[str]:
    """A ContextUsageView in a dozen readable lines: the numbers a chat user asks about."""
    window = view.get("window")
    estimate = view.get("estimated_prompt_tokens")
    fill = view.get("fill_ratio")
    budget = view.get("hard_budget")
    declared = view.get("declared_window") or window
    lines = [
        f"model        {view['model']} ({view['model_source']})",
        f"window       {declared} tokens declared "
        f"({view.get('declared_window_source') or view.get('window_source')}); hard budget "
        f"{'set by the first request' if budget is None else budget}, completion reserve "
        f"{view.get('reserve')}",
    ]
    if window is not None and window != declared:
        # The budget is held to this one: the declared room as the estimator counts it.
        lines.append(f"  calibrated {window} estimated tokens, the same room as the estimates "
                     f"count it ({view.get('window_source')})")
    if estimate is None:
        lines.append("last request none yet")
    else:
        provider = view.get("provider_prompt_tokens")
        told = f", provider counted {provider}" if provider is not None else ""
        held = "calibrated window" if window != declared else "window"
        share = f" ({fill:.0%} of the {held})" if fill is not None else ""
        lines.append(f"last request ~{estimate} tokens estimated{share}{told}")
        parts = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in view["breakdown"].items())
        lines.append(f"  of which    {parts}")
    lines += [
        f"history      {view['history_messages']} messages, ~{view['history_tokens']} tokens, "
        f"after {view['turns']} turn(s)",
        f"compactions  {view['compactions']}",
    ]
    tail = view.get("tail")
    if tail:
        lines.append(
            f"  verbatim   {tail['turns']} turn(s) kept of keep_turns {tail['keep_turns']} "
            f"({tail['messages']} messages, ~{tail['tokens']} tokens; token bound "
            f"{tail['token_bound']})"
        )
    lines += [
        f"model calls  {view['llm_calls']}: {view['prompt_tokens_total']} prompt, "
        f"{view['completion_tokens_total']} completion, {view['cached_tokens_total']} "
        "cached tokens",
        f"cost         ${view['cost']:.4f} ({view['cost_status']})",
        f"status       {view.get('status', 'ok')}",
    ]
    degradation = view.get("degradation") or {}
    if degradation:
        counts = ", ".join(f"{kind} {n}" for kind, n in sorted(degradation.items()))
        lines.append(f"degraded by  {counts}")
    return lines
