"""How ``summarising`` carries out one compaction and reports it (spec 000, spec 002).

One compaction: ``compaction.start``; prune the old tool results (stop if that is
enough); fold the range before the verbatim tail into the running summary, written from
the original messages and checked for their identifiers; ``compaction.stop`` with what
was done. When the summarizer fails the (pruned) messages stay, ``compaction.exception``
says why and the crash marker stays set. :mod:`.conversation` decides when to compact and
how much to fold; this module only does it.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from mas.runtime.catalog import litellm_provider
from mas.runtime.context import ContextBudget, History
from mas.runtime.protocols import (
    ManagedHistory,
    Message,
    Summarizer,
    SummarizerError,
    SummaryEngine,
    SummaryRequest,
    SummaryResult,
)
from mas.runtime.secrets import error_fields

from ._base import FoldingManager
from .identifier_check import IdentifierCheck, SummaryFit
from .identifiers import missing_from
from .pruning import PruneReport, ToolResultPruner

if TYPE_CHECKING:
    from .conversation import SummarisingParams

# Its lines go to the public module's logger: docs/context.md names that logger for spec
# 000's "compacted N exchange(s)" line.
log = logging.getLogger("mas.library.standard.plugins.context.conversation")


class Compacting(FoldingManager):
    """The compaction steps of ``summarising`` (a base class, not registered itself).

    The subclass sets the params, the bound summarizer, the identifier check and the
    tool-result pruner these steps use.
    """

    params: SummarisingParams
    summarizer: Summarizer
    identifier_check: IdentifierCheck
    pruner: ToolResultPruner

    def _compact(
        self,
        history: History,
        before: ManagedHistory,
        budget: ContextBudget,
        start: int,
        fold_end: int | None,
        prunable: list[int],
        estimated: int,
        threshold: int,
        fit: SummaryFit,
        *,
        engine: SummaryEngine | None,
        system: str | None,
        tools: list[dict[str, Any]] | None,
        session_id: str,
    ) -> ManagedHistory:
        """Compact from ``before``, the managed view as it stands (the caller has it)."""
        started = time.monotonic()
        self.state.compaction_in_progress = True
        self.emit(
            "compaction.start",
            {
                "messages_before": len(before.messages),
                "estimated_tokens": estimated,
                "threshold": threshold,
                "system_time": time.time(),
                "monotonic_time": started,
            },
            session_id,
        )
        fixed = budget.fixed.total
        report = self.pruner.prune(
            history,
            prunable,
            satisfied=lambda: self.managed_tokens(history, start) <= threshold,
            fill=lambda: (fixed + self.managed_tokens(history, start)) / max(budget.window, 1),
        )
        info: dict[str, Any] = {
            "estimated_tokens": estimated,
            "threshold": threshold,
            "trigger_source": budget.trigger_source,
            "keep_turns": self.params.keep_turns,
            "at_boundary": not budget.fixed.working_memory,
            "messages_before": len(before.messages),
            "pruned": pruned_counts(report),
        }
        if self.managed_tokens(history, start) <= threshold or fold_end is None:
            return self._finish(history, before, started, info, session_id, summarized=False)
        # The summary is written from what was said, not from what pruning left of it.
        folded = history.originals(start, fold_end)
        request = SummaryRequest(
            messages=history.masked_originals(start, fold_end),
            previous_summary=self.state.summary,
            system=system,
            tools=tools,
            window=budget.window,
            session_id=session_id,
            max_summary_tokens=fit.text_room(self.estimator),
        )
        try:
            result = self.summarizer.summarize(request, engine)
            if result.text is not None and not result.text.strip():
                raise SummarizerError("empty", "the summarizer returned no text")
        except Exception as exc:  # any failure: keep the pruned messages (spec 002)
            return self._failed(history, before, started, info, exc, session_id)
        text, kept, calls = self._checked(
            result, folded, start, request, fit, engine, info, session_id
        )
        turns = len(history.turn_starts(start)) - len(history.turn_starts(fold_end))
        self.fold(history, fold_end, summary=text, unread=result.unread_messages)
        self.state.summary_identifiers = None if kept is None else list(kept)
        self.state.summary_identifier_ranks = kept or {}
        self.identifier_check.forget_before(fold_end)
        if text is not None:
            self.state.summary_count += 1
        info.update(
            {
                "model": result.model,
                "model_source": result.model_source,
                "llm_calls": calls,
                "folded_messages": len(folded),
                "unread_messages": result.unread_messages,
                "folded_turns": turns,
                "tail_messages": history.end - fold_end,
                "tail_tokens": history.tokens_between(fold_end, history.end),
                "summary_room": fit.room,
                "usage": _usage(result.usage),
            }
        )
        log.info(
            "compacted %d exchange(s) model=%s source=%s estimated_tokens=%d threshold=%d "
            "keep_turns=%d",
            turns,
            result.model or "none",
            result.model_source or "none",
            estimated,
            threshold,
            self.params.keep_turns,
        )
        return self._finish(
            history,
            before,
            started,
            info,
            session_id,
            summarized=text is not None,
            llm_called=calls > 0,
        )

    def _checked(
        self,
        result: SummaryResult,
        folded: list[Message],
        first: int,
        request: SummaryRequest,
        fit: SummaryFit,
        engine: SummaryEngine | None,
        info: dict[str, Any],
        session_id: str,
    ) -> tuple[str | None, dict[str, int] | None, int]:
        """The summary to commit (identifier-checked, held to its room), the identifiers it
        keeps with their ranks (``None`` when unchecked), and the calls made."""
        if result.text is None:
            return None, None, result.llm_calls
        check = None
        checker = self.identifier_check
        if checker.mode != "off":
            previous = request.previous_summary
            kept = self.state.summary_identifiers
            if kept is None and previous is not None:
                kept = checker.of_summary(previous)
            earlier: list[Message] = [{"role": "system", "content": previous}] if previous else []
            # Half the room for the appended identifiers at most: the prose keeps the rest.
            # The oldest messages the summarizer could not read are counted as dropped:
            # the summary does not stand for them, so their identifiers are not checked.
            read = folded[result.unread_messages :]
            fold = checker.identifiers(read, first + result.unread_messages, kept or ())
            check = checker.run(
                fold, [*earlier, *read],
                result.text, request, self.summarizer, engine,
                section_room=fit.text_room(self.estimator) // 2, folded_from=len(earlier),
            )
        if check is None:
            return fit.clip(result.text, self.estimator), None, result.llm_calls
        # Ranked as the section ranks them, what people said first and tool output last;
        # the running summary's keep the rank of the fold that first saw them.
        first_ranks = self.state.summary_identifier_ranks
        carried = set(kept or ())
        ranks = {i: first_ranks.get(i, fold.rank[i]) if i in carried else fold.rank[i]
                 for i in check.wanted}
        text = fit.clip(check.text, self.estimator, ranks)
        # Clipping to the room may take out what the check found or added: count it.
        gone = set(missing_from(text, list(check.wanted)))
        check = replace(check, text=text, missing=len(gone))
        data = check.as_event(checker.mode)
        info["identifier_check"] = data
        totals = self.state.identifiers
        for key in ("identifiers", "found", "repaired", "appended", "missing"):
            totals[key] = totals.get(key, 0) + int(getattr(check, key))
        self.emit("summary.checked", data, session_id)
        if check.missing:
            log.info(
                "summary kept %d of %d identifiers of the folded turns (%s mode)",
                check.identifiers - check.missing, check.identifiers, checker.mode,
            )
        kept_now = {i: ranks[i] for i in check.wanted if i not in gone}
        return text, kept_now, result.llm_calls + check.llm_calls

    def _finish(
        self,
        history: History,
        before: ManagedHistory,
        started: float,
        info: dict[str, Any],
        session_id: str,
        *,
        summarized: bool,
        llm_called: bool = False,
    ) -> ManagedHistory:
        # The view returned, carrying ``info`` (the same dict, completed below).
        after = self.view(history, compacted=True, llm_called=llm_called, metadata=info)
        info.setdefault("model", None)
        info.setdefault("model_source", None)
        info.update(
            {
                "messages_after": len(after.messages),
                "tokens_after": after.tokens,
                "summarized": summarized,
                "llm_called": llm_called,
                "summary_count": self.state.summary_count,
            }
        )
        self.state.compactions += 1
        self.state.in_turn_compactions += int(not info.get("at_boundary", True))
        info["in_turn_compactions"] = self.state.in_turn_compactions
        self.state.baseline_tokens = after.tokens
        self.state.last_compaction_metadata = info
        model = info["model"] or ""
        self.emit(
            "compaction.stop",
            {
                **info,
                "duration": time.monotonic() - started,
                "bytes_before": _chars(before.messages),
                "bytes_after": _chars(after.messages),
                "provider": litellm_provider(model) if model else None,
            },
            session_id,
        )
        self.state.compaction_in_progress = False
        return after

    def _failed(
        self,
        history: History,
        before: ManagedHistory,
        started: float,
        info: dict[str, Any],
        exc: Exception,
        session_id: str,
    ) -> ManagedHistory:
        kind = (
            exc.kind
            if isinstance(exc, SummarizerError)
            else ("timeout" if isinstance(exc, TimeoutError) else "exception")
        )
        reason = exc.reason if isinstance(exc, SummarizerError) else f"{type(exc).__name__}: {exc}"
        after = self.view(history)
        calls_model = kind != "no_engine" and bool(getattr(self.summarizer, "calls_model", True))
        self.emit(
            "compaction.exception",
            {
                "duration": time.monotonic() - started,
                "messages_before": len(before.messages),
                "messages_after": len(after.messages),
                "llm_called": calls_model,
                "kind": kind,
                **error_fields(exc),
                # Full text for in-process observers (the session names the endpoint from
                # it); the event sink stores only its type, kind and status.
                "reason": reason,
                "stacktrace": "".join(
                    traceback.format_exception(type(exc), exc, exc.__traceback__)
                ),
                "pruned": info["pruned"],
            },
            session_id,
        )
        log.warning("compaction failed (%s): %s; keeping the pruned messages", kind, reason)
        # The crash marker stays set: a failed compaction must not look like a clean no-op.
        # The failure is this call's compaction metadata: what was tried and why it failed.
        failed = {**info, "failed": True, "kind": kind, "llm_called": calls_model,
                  "messages_after": len(after.messages)}
        return replace(after, compacted=False, llm_called=calls_model, metadata=failed)


def pruned_counts(report: PruneReport) -> dict[str, int]:
    """What a pruning pass changed, as ``context.pruned`` and the compaction events carry it."""
    return {
        "capped": report.capped,
        "soft_trimmed": report.soft_trimmed,
        "cleared": report.cleared,
        "chars_before": report.chars_before,
        "chars_after": report.chars_after,
    }


def _usage(usage: Any) -> dict[str, int] | None:
    if usage is None:
        return None
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "cached_tokens": usage.cached_tokens,
    }


def _chars(messages: Sequence[Message]) -> int:
    # A list, not a generator: a compaction reads every message of the view twice.
    return sum([len(m["content"]) for m in messages if isinstance(m.get("content"), str)])
