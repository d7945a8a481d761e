"""The offline model: ``offline/<name>`` through LiteLLM, no key, no network.

Registered by the ``standard`` plugin as the ``offline`` model provider. Its rules (what
it answers and why) are in ``docs/offline-model.md``, :mod:`._rules` and, for summaries,
:mod:`._summary`.
"""

from __future__ import annotations

from typing import Any

from mas.library.standard.offline._rules import DONT_KNOW, NOTHING_TO_KEEP, Answer, respond
from mas.library.standard.offline.prefix_cache import PrefixCache

PROVIDER = "offline"
"""LiteLLM provider prefix of the offline model."""

DEFAULT_MODEL = "offline/default"
"""The package default model (``mas.runtime`` data/defaults.yaml)."""


def make_handler() -> Any:
    """Build the LiteLLM handler (imports litellm, so only called on a first model call)."""
    from mas.library.standard.offline.handler import OfflineLLM

    return OfflineLLM()


__all__ = [
    "DEFAULT_MODEL",
    "DONT_KNOW",
    "NOTHING_TO_KEEP",
    "PROVIDER",
    "Answer",
    "PrefixCache",
    "make_handler",
    "respond",
]
