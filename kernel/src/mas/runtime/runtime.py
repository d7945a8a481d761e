"""The runtime object: owns one plugin manager and the registries built from it.

There is no global runtime; create one per process, test or notebook.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from mas.runtime._plugin_faults import fault_location, package_of
from mas.runtime.events import Event
from mas.runtime.plugins import MasPluginManager, make_plugin_manager
from mas.runtime.registry import KINDS, REGISTRATION_HOOKS, Registries

log = logging.getLogger(__name__)

EventListener = Callable[[Event], None]


class Runtime:
    """Plugin manager, registries and event fan-out for one process (or test).

    :param pm: a manager from :func:`~mas.runtime.plugins.make_plugin_manager`.
    """

    def __init__(self, pm: MasPluginManager) -> None:
        self.pm = pm
        self.registries = build_registries(pm)
        self._listeners: list[EventListener] = []

    @classmethod
    def create(
        cls,
        *,
        entry_points: bool = True,
        plugins: Iterable[tuple[str, object]] = (),
        disabled: Iterable[str] | None = None,
        strict: bool = False,
    ) -> Runtime:
        """Build a runtime with a fresh plugin manager (arguments as for the manager)."""
        return cls(
            make_plugin_manager(
                entry_points=entry_points, plugins=plugins, disabled=disabled, strict=strict
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
        """Fault plugin ``name`` after start-up: record and report it, forget its types."""
        self.pm.fail(name, reason, stage=stage, file=file, line=line)
        for registry in self.registries:
            registry.discard_provider(name)

    def add_listener(self, listener: EventListener) -> Callable[[], None]:
        """Send every emitted event to ``listener`` too; returns a function that removes it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def emit(self, event: Event) -> None:
        """Record ``event`` with the listeners, then tell every ``mas_observe_event`` hook.

        An observer that raises is logged and skipped: observation never stops a run.
        """
        for listener in list(self._listeners):
            listener(event)
        for impl in reversed(self.pm.hook.mas_observe_event.get_hookimpls()):
            try:
                impl.function(**_accepted({"event": event}, impl.argnames))
            except Exception:
                log.exception("observer %s failed on %s", impl.plugin_name, event.name)


def _accepted(kwargs: dict[str, Any], argnames: tuple[str, ...]) -> dict[str, Any]:
    # pluggy lets an implementation take fewer arguments than its spec.
    return {name: kwargs[name] for name in argnames if name in kwargs}


def build_registries(pm: MasPluginManager) -> Registries:
    """Call each registration hook plugin by plugin, recording who registered what.

    Calling implementations one at a time (rather than through ``pm.hook``) is what lets
    each entry remember its provider and a duplicate name say which two plugins clash. A
    hook that raises (a bad type name, a duplicate, a bug) faults its plugin alone: what it
    registered is forgotten in every kind, it is taken out of the manager, and the other
    plugins' types stay.
    """
    registries = Registries()
    failed = pm.failed_names()
    for kind in KINDS:
        registry = registries[kind]
        # One list shared by every kind, so a fault found later still reaches earlier kinds.
        registry.failed_plugins = failed
        caller = getattr(pm.hook, REGISTRATION_HOOKS[kind])
        for impl in reversed(caller.get_hookimpls()):
            if impl.plugin_name in failed:
                continue
            pm.trace.root.get("registry")(caller.name, impl.plugin_name)
            registry.current = pm.info(impl.plugin_name)
            try:
                impl.function(**_accepted({"registry": registry}, impl.argnames))
            except Exception as exc:  # one plugin's bug must not take the CLI down
                file, line = fault_location(exc, package_of(impl.plugin))
                pm.fail(impl.plugin_name, exc, stage="hook", file=file, line=line)
                failed.append(impl.plugin_name)
                for each in registries:
                    each.discard_provider(impl.plugin_name)
    return registries
