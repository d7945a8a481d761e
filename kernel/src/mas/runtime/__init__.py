"""mas-runtime: the kernel of mas-lab.

Quick start for plugin authors — a module named by an entry point in group ``mas``
(the whole walk-through, with tests, is docs/plugins.md)::

    # pyproject.toml
    [project]
    dependencies = ["mas-runtime>=0.1,<0.2"]

    [project.entry-points.mas]
    headline = "headline_summarizer.plugin"

    # headline_summarizer/plugin.py
    from pydantic import BaseModel, ConfigDict, Field
    from mas.runtime import hookimpl
    from mas.runtime.protocols import SummaryResult

    class HeadlineParams(BaseModel):
        model_config = ConfigDict(extra="forbid")
        max_words: int = Field(default=12, ge=1)

    class Headline:
        def __init__(self, params: HeadlineParams, ctx: object) -> None:
            self.params = params

        def summarize(self, request, engine) -> SummaryResult:
            ...

    @hookimpl
    def mas_register_summarizers(registry):
        registry.register("headline", Headline, params=HeadlineParams)

Then bind it in a manifest with ``summarizer: {type: headline, params: {max_words: 6}}``.
Every hook is documented in :mod:`mas.runtime.hookspecs`.
"""

from __future__ import annotations

import importlib_metadata
import pluggy

from mas.runtime.errors import (
    DuplicateTypeError,
    ManifestError,
    MasError,
    PluginLoadError,
    Problem,
    TypeClashError,
    UnknownTypeError,
)
from mas.runtime.events import Event
from mas.runtime.plugins import make_plugin_manager
from mas.runtime.registry import KindRegistry, NoParams, TypeEntry
from mas.runtime.runtime import Runtime

try:
    __version__: str = importlib_metadata.version("mas-runtime")
except importlib_metadata.PackageNotFoundError:  # imported from a source tree, not installed
    __version__ = "0.0.0+unknown"

hookimpl = pluggy.HookimplMarker("mas")
"""Marker for hook implementations: ``@hookimpl`` on a ``mas_*`` function."""

__all__ = [
    "DuplicateTypeError",
    "Event",
    "KindRegistry",
    "ManifestError",
    "MasError",
    "NoParams",
    "PluginLoadError",
    "Problem",
    "Runtime",
    "TypeEntry",
    "TypeClashError",
    "UnknownTypeError",
    "__version__",
    "hookimpl",
    "make_plugin_manager",
]
