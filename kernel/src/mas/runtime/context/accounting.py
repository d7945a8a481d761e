"""Where every committed message went on one request (DESIGN §11, "four states").

At each request a committed message is in exactly one state:

- **sent** — in the request verbatim, or pruned / shortened but still there;
- **summarized** — folded into the summary block that is sent;
- **dropped** — left out on purpose by the strategy's policy (a sliding window, a stack
  cap, the ``drop`` summarizer);
- **cut** — removed by the final trim although the strategy meant to send it (or folded
  into a summary block that the trim then removed). A working ``summarising`` never cuts.

The context manager reports what it folded (:class:`FoldLedger` on its
:class:`~mas.runtime.protocols.ManagedHistory`); the assembler adds what the trim kept
and removed. The four counts always add up to every message the session committed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Tally:
    """A count of messages and their estimated tokens."""

    messages: int = 0
    tokens: int = 0

    def __add__(self, other: Tally) -> Tally:
        return Tally(self.messages + other.messages, self.tokens + other.tokens)

    def __sub__(self, other: Tally) -> Tally:
        return Tally(self.messages - other.messages, self.tokens - other.tokens)

    def as_dict(self) -> dict[str, int]:
        """``{"messages": n, "tokens": t}``."""
        return {"messages": self.messages, "tokens": self.tokens}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Tally:
        """The tally saved by :meth:`as_dict` (``None`` gives zero)."""
        data = data or {}
        return cls(int(data.get("messages", 0)), int(data.get("tokens", 0)))


@dataclass(frozen=True)
class FoldLedger:
    """What a context manager has folded out of live history so far.

    :ivar summarized: folded into the running summary (which the manager sends).
    :ivar dropped: folded with no summary standing in for them (policy drops).
    """

    summarized: Tally = field(default_factory=Tally)
    dropped: Tally = field(default_factory=Tally)

    @property
    def folded(self) -> Tally:
        """Everything folded, summarized or dropped."""
        return self.summarized + self.dropped


@dataclass(frozen=True)
class Accounting:
    """The four states of the committed messages on one request.

    :ivar sent: in the request (verbatim or pruned).
    :ivar summarized: represented by the summary block that is sent.
    :ivar dropped: left out by the strategy's policy.
    :ivar cut: removed by the final trim against the strategy's intent.
    """

    sent: Tally
    summarized: Tally
    dropped: Tally
    cut: Tally

    @property
    def committed(self) -> int:
        """Messages the session has committed (the four counts added up)."""
        return (
            self.sent.messages + self.summarized.messages + self.dropped.messages
            + self.cut.messages
        )

    def as_dict(self) -> dict[str, dict[str, int]]:
        """JSON-ready: ``{"sent": {...}, "summarized": {...}, "dropped": {...}, "cut": {...}}``."""
        return {
            "sent": self.sent.as_dict(),
            "summarized": self.summarized.as_dict(),
            "dropped": self.dropped.as_dict(),
            "cut": self.cut.as_dict(),
        }


def account(
    *,
    committed: int,
    live: Tally,
    ledger: FoldLedger | None,
    trimmed: Tally,
    summary_sent: bool,
) -> Accounting:
    """Combine the manager's ledger with the trim into the four states.

    :param committed: messages the session has committed in all (``history.end``).
    :param live: committed messages the manager put in its managed history.
    :param ledger: what the manager folded; ``None`` for a manager that does not say, in
        which case everything it left out counts as dropped by its policy.
    :param trimmed: committed messages the final trim removed from ``live``.
    :param summary_sent: the summary block survived the trim (``False`` when there is none
        or it was removed; then the summarized messages are cut as well).
    """
    folded = committed - live.messages
    summarized = ledger.summarized if ledger is not None else Tally()
    if ledger is not None and summarized.messages + ledger.dropped.messages == folded:
        dropped = ledger.dropped
    else:
        # A manager whose ledger does not cover what it left out: the rest was its choice.
        extra = ledger.dropped.tokens if ledger is not None else 0
        dropped = Tally(folded - summarized.messages, extra)
    cut = trimmed
    if not summary_sent and summarized.messages:
        cut, summarized = cut + summarized, Tally()
    # Most requests trim nothing: then what is sent is the live tally itself.
    sent = live - trimmed if trimmed.messages or trimmed.tokens else live
    return Accounting(sent=sent, summarized=summarized, dropped=dropped, cut=cut)


__all__ = ["Accounting", "FoldLedger", "Tally", "account"]
