"""Plugin discovery and the runtime's plugin manager.

Load order is fixed: add the hookspecs, register the kernel's built-in plugin, load the
entry points of group ``mas`` (skipping those named in ``MAS_DISABLE_PLUGINS``), then
``check_pending()`` so a misspelled hook fails at start-up rather than never being called.
A plugin that fails to import is recorded as a :class:`PluginLoadError` and the others
still load; ``strict=True`` raises it instead.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterable
from typing import Any

import importlib_metadata
import pluggy

from mas.runtime import hookspecs
from mas.runtime.errors import PluginLoadError
from mas.runtime.registry import PluginInfo

PROJECT = "mas"
ENTRY_POINT_GROUP = "mas"
DISABLE_ENV = "MAS_DISABLE_PLUGINS"
TRACE_ENV = "MAS_TRACE_PLUGINS"

log = logging.getLogger(__name__)


class MasPluginManager(pluggy.PluginManager):
    """A pluggy manager that also remembers where each plugin came from and what failed."""

    def __init__(self) -> None:
        super().__init__(PROJECT)
        self.infos: dict[str, PluginInfo] = {}
        self.failures: list[PluginLoadError] = []

    def register_plugin(self, plugin: object, name: str, info: PluginInfo | None = None) -> None:
        """Register ``plugin`` under ``name`` and record its provenance."""
        self.register(plugin, name=name)
        self.infos[name] = info or PluginInfo(name)

    def info(self, name: str) -> PluginInfo:
        """Provenance of the plugin registered as ``name``."""
        return self.infos.get(name, PluginInfo(name))


def disabled_plugins(env: dict[str, str] | None = None) -> set[str]:
    """Names listed in ``MAS_DISABLE_PLUGINS`` (comma-separated, blanks ignored)."""
    raw = (env if env is not None else os.environ).get(DISABLE_ENV, "")
    return {name.strip() for name in raw.split(",") if name.strip()}


def make_plugin_manager(
    *,
    entry_points: bool = True,
    plugins: Iterable[tuple[str, object]] = (),
    disabled: Iterable[str] | None = None,
    strict: bool = False,
) -> MasPluginManager:
    """Build a fresh plugin manager; nothing is shared between calls.

    :param entry_points: load installed plugins from entry-point group ``mas``.
    :param plugins: extra ``(name, plugin)`` pairs registered in-process after the
        built-in plugin (tests, notebooks).
    :param disabled: plugin names to skip; defaults to ``MAS_DISABLE_PLUGINS``.
    :param strict: raise the first :class:`PluginLoadError` instead of recording it.
    """
    from mas.runtime import _builtin

    pm = MasPluginManager()
    pm.add_hookspecs(hookspecs)
    if os.environ.get(TRACE_ENV, "") not in ("", "0"):
        pm.trace.root.setwriter(sys.stderr.write)
        pm.enable_tracing()
    blocked = set(disabled) if disabled is not None else disabled_plugins()
    for name in blocked:
        pm.set_blocked(name)
    pm.register_plugin(_builtin, "builtin", PluginInfo("builtin", "mas-runtime", _version()))
    for name, plugin in plugins:
        pm.register_plugin(plugin, name)
    if entry_points:
        _load_entry_points(pm, strict=strict)
    pm.check_pending()
    return pm


def _version() -> str | None:
    try:
        return importlib_metadata.version("mas-runtime")
    except importlib_metadata.PackageNotFoundError:
        return None


def _load_entry_points(pm: MasPluginManager, *, strict: bool) -> None:
    for ep in importlib_metadata.entry_points(group=ENTRY_POINT_GROUP):
        if pm.is_blocked(ep.name) or pm.has_plugin(ep.name):
            continue
        dist = getattr(ep, "dist", None)
        dist_name = dist.metadata["Name"] if dist is not None else None
        dist_version = dist.version if dist is not None else None
        try:
            plugin: Any = ep.load()
            pm.register_plugin(plugin, ep.name, PluginInfo(ep.name, dist_name, dist_version))
        except Exception as exc:  # a broken plugin must not take the others down
            error = PluginLoadError(ep.name, ENTRY_POINT_GROUP, dist_name, dist_version, exc)
            error.__cause__ = exc
            if strict:
                raise error from exc
            log.warning("%s", error)
            pm.failures.append(error)
