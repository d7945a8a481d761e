"""Plugin discovery and the runtime's plugin manager.

Load order is fixed: add the hookspecs, register the kernel's built-in plugin, load the
entry points of group ``mas`` (skipping those named in ``MAS_DISABLE_PLUGINS``), then the
one-file plugins of ``MAS_PLUGINS_DIR`` (``mas-ctl --plugins-dir``), then check
every plugin for hooks no spec declares, so a misspelled hook fails at start-up rather
than never being called.

One faulty plugin never takes the others down: a plugin that fails to import, to
register, or declares an unknown hook is recorded as a :class:`PluginLoadError` (with the
file and line in its own code), reported once on stderr with the ``MAS_DISABLE_PLUGINS``
hint, and left out; ``strict=True`` raises the error instead. ``SystemExit`` from a
plugin is such a fault too, and so is an import or registration hook still running after
``load_timeout`` seconds (issue 26, items 2 and 3).
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import Any

import importlib_metadata
import pluggy

from mas.runtime import _plugin_faults, _plugins_dir, hookspecs
from mas.runtime._plugin_deadline import DEFAULT_LOAD_TIMEOUT, call_with_deadline
from mas.runtime.errors import PluginLoadError
from mas.runtime.registry import PluginInfo

PROJECT = "mas"
ENTRY_POINT_GROUP = "mas"
DISABLE_ENV = "MAS_DISABLE_PLUGINS"
TRACE_ENV = "MAS_TRACE_PLUGINS"
IN_PROCESS = "in-process"
"""The group recorded for plugins registered from code rather than an entry point."""


class MasPluginManager(pluggy.PluginManager):
    """A pluggy manager that also remembers where each plugin came from and what failed.

    :param load_timeout: seconds a plugin's import and each of its registration hooks may
        take before the plugin is left out.
    """

    def __init__(
        self, *, strict: bool = False, load_timeout: float = DEFAULT_LOAD_TIMEOUT
    ) -> None:
        super().__init__(PROJECT)
        self.strict = strict
        self.load_timeout = load_timeout
        self.infos: dict[str, PluginInfo] = {}
        self.groups: dict[str, str] = {}
        self.failures: list[PluginLoadError] = []

    def register_plugin(
        self,
        plugin: object,
        name: str,
        info: PluginInfo | None = None,
        *,
        group: str = IN_PROCESS,
    ) -> None:
        """Register ``plugin`` under ``name`` and record its provenance.

        A plugin pluggy refuses (a hook whose arguments its spec lacks) becomes a fault.
        """
        self.infos[name] = info or PluginInfo(name)
        self.groups[name] = group
        try:
            self.register(plugin, name=name)
        except pluggy.PluginValidationError as exc:
            file, line = _plugin_faults.fault_location(exc, _plugin_faults.package_of(plugin))
            self.fail(name, exc, stage="register", file=file, line=line)

    def info(self, name: str) -> PluginInfo:
        """Provenance of the plugin registered as ``name``."""
        return self.infos.get(name, PluginInfo(name))

    def fail(
        self,
        name: str,
        reason: BaseException,
        *,
        stage: str,
        file: str | None = None,
        line: int | None = None,
    ) -> PluginLoadError:
        """Record that plugin ``name`` is faulty, take it out, and report it once.

        Anything a plugin raises is its fault, ``SystemExit`` included (a plugin may not
        end the process), except ``KeyboardInterrupt``: the user's Ctrl-C, raised again.

        :raises PluginLoadError: when the manager is strict.
        """
        if isinstance(reason, KeyboardInterrupt):
            raise reason
        info = self.info(name)
        error = PluginLoadError(
            name,
            self.groups.get(name, ENTRY_POINT_GROUP),
            info.distribution,
            info.version,
            reason,
            stage=stage,
            file=file,
            line=line,
        )
        error.__cause__ = reason
        if self.strict:
            raise error from reason
        if self.has_plugin(name):
            self.unregister(name=name)
        self.failures.append(error)
        _plugin_faults.report(error)
        return error

    def failed_names(self) -> list[str]:
        """Names of the plugins left out because of a fault, in the order they failed."""
        return [f.entry_point for f in self.failures]


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
    load_timeout: float = DEFAULT_LOAD_TIMEOUT,
    plugins_dir: Path | None = None,
) -> MasPluginManager:
    """Build a fresh plugin manager; nothing is shared between calls.

    :param entry_points: load installed plugins from entry-point group ``mas``.
    :param plugins: extra ``(name, plugin)`` pairs registered in-process after the
        built-in plugin (tests, notebooks).
    :param disabled: plugin names to skip; defaults to ``MAS_DISABLE_PLUGINS``.
    :param strict: raise the first :class:`PluginLoadError` instead of recording it.
    :param load_timeout: seconds each plugin's import and each of its registration hooks
        may take (default 30); a plugin past it is left out.
    :param plugins_dir: a folder of one-file plugins; defaults to ``MAS_PLUGINS_DIR``
        (loaded only with ``entry_points``, as installed plugins are).
    :raises MasError: ``MAS_PLUGINS_DIR`` names something that is not a folder.
    """
    from mas.runtime import __version__, _builtin

    pm = MasPluginManager(strict=strict, load_timeout=load_timeout)
    pm.add_hookspecs(hookspecs)
    if os.environ.get(TRACE_ENV, "") not in ("", "0"):
        pm.trace.root.setwriter(sys.stderr.write)
        pm.enable_tracing()
    blocked = set(disabled) if disabled is not None else disabled_plugins()
    for name in blocked:
        pm.set_blocked(name)
    pm.register_plugin(_builtin, "builtin", PluginInfo("builtin", "mas-runtime", __version__))
    for name, plugin in plugins:
        pm.register_plugin(plugin, name)
    if entry_points:
        _load_entry_points(pm)
        folder = plugins_dir if plugins_dir is not None else _plugins_dir.plugins_dir()
        if folder is not None:
            _load_plugins_dir(pm, folder)
    _drop_unknown_hooks(pm)
    return pm


def _load_entry_points(pm: MasPluginManager) -> None:
    for ep in importlib_metadata.entry_points(group=ENTRY_POINT_GROUP):
        if pm.is_blocked(ep.name) or pm.has_plugin(ep.name):
            continue
        dist = getattr(ep, "dist", None)
        info = PluginInfo(
            ep.name,
            dist.metadata["Name"] if dist is not None else None,
            dist.version if dist is not None else None,
        )
        try:
            plugin: Any = call_with_deadline(
                ep.load, pm.load_timeout, f"import of entry point {ep.name!r}"
            )
        except BaseException as exc:  # a broken plugin must not take the others down
            pm.infos[ep.name] = info
            pm.groups[ep.name] = ENTRY_POINT_GROUP
            # The module named by the entry point is the plugin's own code, even unimported.
            package = ep.module.rpartition(".")[0] or ep.module
            file, line = _plugin_faults.fault_location(exc, package)
            pm.fail(ep.name, exc, stage="import", file=file, line=line)
            continue
        pm.register_plugin(plugin, ep.name, info, group=ENTRY_POINT_GROUP)


def _load_plugins_dir(pm: MasPluginManager, folder: Path) -> None:
    for path in _plugins_dir.plugin_files(folder):
        name = path.stem
        if pm.is_blocked(name):
            continue
        if name in pm.infos:  # faulting it would take out the plugin that has the name
            _plugin_faults.warn_once(
                f"{path}: not loaded: a plugin named {name!r} is already loaded; rename the file")
            continue
        pm.infos[name] = PluginInfo(name, str(path))
        pm.groups[name] = _plugins_dir.GROUP
        try:
            module = call_with_deadline(
                partial(_plugins_dir.import_file, path), pm.load_timeout, f"import of {path}"
            )
        except BaseException as exc:  # a broken file must not take the others down
            file, line = _plugin_faults.fault_location(exc, _plugins_dir.MODULE_PREFIX + name)
            pm.fail(name, exc, stage="import", file=file or str(path), line=line)
            continue
        pm.register_plugin(module, name, pm.infos[name], group=_plugins_dir.GROUP)


def _drop_unknown_hooks(pm: MasPluginManager) -> None:
    # pluggy's check_pending() raises for the first offender and leaves it registered;
    # here each plugin with a hook no spec declares is faulted on its own.
    known = [name for name in dir(hookspecs) if name.startswith(PROJECT + "_")]
    for name, plugin in pm.list_name_plugin():
        if plugin is None:
            continue
        for caller in pm.get_hookcallers(plugin) or []:
            if caller.has_spec():
                continue
            impl = next(
                (i for i in caller.get_hookimpls() if i.plugin is plugin and not i.optionalhook),
                None,
            )
            if impl is None:
                continue
            close = difflib.get_close_matches(caller.name, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            reason = pluggy.PluginValidationError(
                plugin, f"unknown hook {caller.name!r}{hint}"
            )
            file, line = _plugin_faults.function_location(impl.function)
            pm.fail(name, reason, stage="register", file=file, line=line)
            break
