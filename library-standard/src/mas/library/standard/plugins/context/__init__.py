"""The standard context managers, summarizers and tool-result pruning.

- ``summarising`` (:mod:`.conversation`): prune, then fold old turns into a running summary.
- ``sliding_window`` (:mod:`.sliding_window`): the newest N user turns or a token budget.
- ``stack`` (:mod:`.stack`): everything, optionally capped to ``max_messages``.
- ``llm`` / ``drop`` summarizers (:mod:`.summarizer`).
- :class:`~.pruning.ToolResultPruner`: spec 002 / spec 004 tool-result pruning.
"""

from __future__ import annotations

from .conversation import SummarisingContextManager, SummarisingParams
from .pruning import PruningParams, ToolResultPruner
from .sliding_window import SlidingWindowContextManager, SlidingWindowParams
from .stack import StackContextManager, StackParams
from .summarizer import DropSummarizer, LlmParams, LlmSummarizer

__all__ = [
    "DropSummarizer",
    "LlmParams",
    "LlmSummarizer",
    "PruningParams",
    "SlidingWindowContextManager",
    "SlidingWindowParams",
    "StackContextManager",
    "StackParams",
    "SummarisingContextManager",
    "SummarisingParams",
    "ToolResultPruner",
]
