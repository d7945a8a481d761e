"""The runtime object: owns one plugin manager and the registries built from it.

There is no global runtime; create one per process, test or notebook.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pluggy import HookImpl

from mas.runtime._plugin_deadline import DEFAULT_LOAD_TIMEOUT, call_with_deadline
from mas.runtime._plugin_faults import fault_location, package_of
from mas.runtime.errors import MasError
from mas.runtime.events import Event
from mas.runtime.plugins import MasPluginManager, make_plugin_manager
from mas.runtime.registry import (
    KINDS,
    REGISTRATION_HOOKS,
    KindRegistry,
    PluginInfo,
    Registries,
    TypeEntry,
)
from mas.runtime.secrets import mask

EventListener = Callable[[Event], None]


class Runtime:
    """Plugin manager, registries and event fan-out for one process (or test).

    :param pm: a manager from :func:`~mas.runtime.plugins.make_plugin_manager`.
    """

    def __init__(self, pm: MasPluginManager) -> None:
        self.pm = pm
        self.registries = build_registries(pm)
        self._listeners: list[EventListener] = []
        self._faults_lock = threading.Lock()
        self.faults: list[str] = []
        """One line per plugin left out while commands ran (not at start-up), for the
        command to end degraded: what ran before the fault had the plugin, what ran after
        did not."""

    @classmethod
    def create(
        cls,
        *,
        entry_points: bool = True,
        plugins: Iterable[tuple[str, object]] = (),
        disabled: Iterable[str] | None = None,
        strict: bool = False,
        load_timeout: float = DEFAULT_LOAD_TIMEOUT,
        plugins_dir: Path | None = None,
    ) -> Runtime:
        """Build a runtime with a fresh plugin manager (arguments as for the manager)."""
        return cls(
            make_plugin_manager(
                entry_points=entry_points,
                plugins=plugins,
                disabled=disabled,
                strict=strict,
                load_timeout=load_timeout,
                plugins_dir=plugins_dir,
            )
        )

    def fail_plugin(
        self,
        name: str,
        reason: BaseException,
        *,
        stage: str,
        file: str | None = None,
        line: int | None = None,
    ) -> None:
        """Fault plugin ``name`` after start-up: record and report it, forget its types.

        Emits ``plugin.fault`` (outside any session: the plugin is gone for all of them),
        which a session whose turn is running counts as ``plugin_faults``.
        ``KeyboardInterrupt`` is not a fault: it is raised again.
        """
        if isinstance(reason, KeyboardInterrupt):
            raise reason
        with self._faults_lock:  # sessions on threads may fault the same plugin at once
            if name in self.pm.failed_names():
                return
            error = self.pm.fail(name, reason, stage=stage, file=file, line=line)
            for registry in self.registries:
                registry.discard_provider(name)
                # Named when a manifest binds one of its types, as a start-up fault is.
                if name not in registry.failed_plugins:
                    registry.failed_plugins.append(name)
            if stage != "command":  # a plugin command that fails to load is start-up
                self.faults.append(f"plugin {name!r} left out during the run, at "
                                   f"{file}:{line} ({type(reason).__name__})")
        self.emit(Event("plugin.fault", {
            "plugin": name, "distribution": error.distribution, "stage": stage,
            "file": file, "line": line, "error": mask(f"{type(reason).__name__}: {reason}"),
        }))

    def fail_factory(self, entry: TypeEntry, reason: BaseException, *, stage: str) -> None:
        """Fault the plugin whose factory for ``entry`` raised ``reason``, at its own line."""
        file, line = fault_location(reason, package_of(entry.factory), entry.factory)
        self.fail_plugin(entry.provider.name, reason, stage=stage, file=file, line=line)

    def add_listener(self, listener: EventListener) -> Callable[[], None]:
        """Send every emitted event to ``listener`` too; returns a function that removes it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def emit(self, event: Event) -> None:
        """Record ``event`` with the listeners, then tell every ``mas_observe_event`` hook.

        An observer that raises faults its plugin (:meth:`call_hook`): observation never
        stops a run.
        """
        for listener in list(self._listeners):
            listener(event)
        self.call_hook("mas_observe_event", event=event, user_errors=())

    def call_hook(
        self,
        name: str,
        *,
        user_errors: tuple[type[Exception], ...] = (MasError,),
        **kwargs: Any,
    ) -> list[Any]:
        """Call behaviour hook ``name`` plugin by plugin; the answers that are not ``None``.

        Implementations run in pluggy's order, and a ``firstresult`` hook stops at its
        first answer. An implementation that raises anything but one of ``user_errors``
        (by default a :class:`~mas.runtime.errors.MasError`, meant for the user: it
        propagates) faults its plugin as a failing registration hook does: reported once
        with its file and line and the ``MAS_DISABLE_PLUGINS`` hint, left out from then
        on, and the other plugins answer. The kernel's own ``builtin`` plugin is never
        left out.
        """
        caller = getattr(self.pm.hook, name)
        first = bool(caller.spec and caller.spec.opts.get("firstresult"))
        trace = self.pm.trace.root.get("hook")  # MAS_TRACE_PLUGINS, as pm.hook would write
        answers = []
        for impl in reversed(caller.get_hookimpls()):
            trace(name, impl.plugin_name)
            try:
                answer = impl.function(**_accepted(kwargs, impl.argnames))
            except user_errors:
                raise
            except BaseException as exc:  # one plugin's bug must not take the run down
                if impl.plugin_name == "builtin":
                    raise
                file, line = fault_location(exc, package_of(impl.plugin), impl.function)
                self.fail_plugin(impl.plugin_name, exc, stage="call", file=file, line=line)
                continue
            if answer is not None:
                answers.append(answer)
                if first:
                    break
        return answers


def _accepted(kwargs: dict[str, Any], argnames: tuple[str, ...]) -> dict[str, Any]:
    # pluggy lets an implementation take fewer arguments than its spec.
    return {name: kwargs[name] for name in argnames if name in kwargs}


def build_registries(pm: MasPluginManager) -> Registries:
    """Call each registration hook plugin by plugin, recording who registered what.

    Calling implementations one at a time (rather than through ``pm.hook``) is what lets
    each entry remember its provider and a duplicate name say which two plugins clash. A
    hook that raises (a bad type name, a duplicate, a bug, ``SystemExit``) or is still
    running after the manager's ``load_timeout`` faults its plugin alone: what it
    registered is forgotten in every kind, it is taken out of the manager, and the other
    plugins' types stay.
    """
    registries = Registries()
    failed = pm.failed_names()
    for kind in KINDS:
        registry = registries[kind]
        # One list shared by every kind, so a fault found later still reaches earlier kinds.
        registry.failed_plugins = failed
        registry.strict = pm.strict
        caller = getattr(pm.hook, REGISTRATION_HOOKS[kind])
        for impl in reversed(caller.get_hookimpls()):
            if impl.plugin_name in failed:
                continue
            pm.trace.root.get("registry")(caller.name, impl.plugin_name)
            try:
                call_with_deadline(
                    _registering(registry, pm.info(impl.plugin_name), impl),
                    pm.load_timeout,
                    f"hook {caller.name} of plugin {impl.plugin_name!r}",
                )
            except BaseException as exc:  # one plugin's bug must not take the CLI down
                file, line = fault_location(exc, package_of(impl.plugin))
                pm.fail(impl.plugin_name, exc, stage="hook", file=file, line=line)
                failed.append(impl.plugin_name)
                for each in registries:
                    each.discard_provider(impl.plugin_name)
    return registries


def _registering(registry: KindRegistry, info: PluginInfo, impl: HookImpl) -> Callable[[], None]:
    # The hook runs on its own thread, which is what ``registry.current`` is kept per.
    def call() -> None:
        registry.current = info
        impl.function(**_accepted({"registry": registry}, impl.argnames))

    return call
