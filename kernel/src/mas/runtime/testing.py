"""Opt-in pytest plugin for testing mas plugins.

Enable it with ``pytest_plugins = ["mas.runtime.testing"]``.

Fixtures:

``mas_runtime``
    A fresh :class:`~mas.runtime.Runtime` with every installed entry-point plugin.
``register_plugin``
    ``register_plugin(obj, name=None)`` registers ``obj`` (a module or an object with
    ``@hookimpl`` methods) into a fresh runtime built with the installed plugins plus every
    object registered so far in this test, and returns that runtime. Nothing outlives the
    test: each call builds a new manager. A fault of a plugin registered this way (a hook
    that raises, a duplicate or badly formed type name, an unknown hook) is raised as
    :class:`~mas.runtime.errors.PluginLoadError`.

Helpers: :func:`run_in_loopback_namespace` runs a command where the only network is
loopback (for services such as Ray that bind the host's own address).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest

from mas.runtime.runtime import Runtime


@pytest.fixture
def mas_runtime() -> Runtime:
    """A fresh runtime with all installed plugins loaded from entry points."""
    return Runtime.create()


@pytest.fixture
def register_plugin() -> Callable[..., Runtime]:
    """Register in-process plugins for one test; returns a function giving a fresh runtime."""
    registered: list[tuple[str, object]] = []

    def register(plugin: object, name: str | None = None, *, entry_points: bool = True) -> Runtime:
        registered.append((name or f"test-plugin-{len(registered)}", plugin))
        runtime = Runtime.create(entry_points=entry_points, plugins=list(registered))
        # The plugin under test must not be left out quietly: its fault fails the test.
        # Faults of other installed plugins are reported on stderr, as in mas-ctl.
        mine = {n for n, _ in registered}
        for fault in runtime.pm.failures:
            if fault.entry_point in mine:
                raise fault
        # A name it shares with another plugin binds neither: that fails the test too.
        for registry in runtime.registries:
            for key, holders in registry.clashes.items():
                if any(holder.provider.name in mine for holder in holders):
                    registry.get(key)  # raises the TypeClashError naming both
        return runtime

    return register


LOOPBACK_ONLY = "ip link set lo up && exec \"$@\""
"""Shell run inside the new namespace: bring loopback up, then the command."""


def run_in_loopback_namespace(
    argv: list[str], *, timeout: float, cwd: str | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` in a private network namespace whose only interface is loopback.

    For services that bind the host's own address rather than 127.0.0.1 (Ray chooses the
    node's routable address and ignores an override): in the namespace that address is
    127.0.0.1, so tests and benchmarks send traffic to loopback only. Needs ``unshare``
    (util-linux) and the right to create a network namespace (root, as CI runs).

    :raises RuntimeError: no network namespace can be made here (the reason included).
    """
    probe = subprocess.run(["unshare", "--net", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        raise RuntimeError(
            f"cannot create a network namespace (unshare --net: {probe.stderr.strip()}); "
            "run as root, or where unprivileged network namespaces are allowed"
        )
    return subprocess.run(
        ["unshare", "--net", "--", "sh", "-c", LOOPBACK_ONLY, "sh", *argv],
        capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env,
    )
