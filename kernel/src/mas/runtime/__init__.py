"""mas-runtime: the kernel of mas-lab.

Quick start for plugin authors — a module named by an entry point in group ``mas``::

    # pyproject.toml
    [project.entry-points.mas]
    my_plugin = "my_package.plugin"

    # my_package/plugin.py
    from pydantic import BaseModel, ConfigDict
    from mas.runtime import hookimpl

    class Params(BaseModel):
        model_config = ConfigDict(extra="forbid")
        max_words: int = 50

    class FirstWords:
        def __init__(self, params: Params, ctx: object) -> None:
            self.params = params
        ...

    @hookimpl
    def mas_register_summarizers(registry):
        registry.register("first_words", FirstWords, params=Params)

Then bind it in a manifest with ``summarizer: {type: first_words, params: {max_words: 20}}``.
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
    "UnknownTypeError",
    "__version__",
    "hookimpl",
    "make_plugin_manager",
]
