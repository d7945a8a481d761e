"""Which plugins a run used, and the distributions (with versions) that registered them.

The kernel's registries remember every type string looked up by name (context managers,
summarizers and identifier extractors bound by the flavours, the pipeline's steps, the
metrics scored). ``run.json`` keeps that list under ``plugins``, merged over the run's
life: ``mas-ctl lab report`` re-rendering a folder keeps what the original run recorded.
"""

from __future__ import annotations

from typing import Any

from mas.library.lab.rundir import RUN_FILE, RunFolder, write_json
from mas.runtime.runtime import Runtime

PLUGINS_KEY = "plugins"
"""The key of ``run.json`` holding the plugins used."""


def plugins_used(runtime: Runtime) -> list[dict[str, Any]]:
    """Every type the runtime bound: kind, type, plugin, distribution and version."""
    return [{"kind": e.kind, "type": e.name, "plugin": e.provider.name,
             "distribution": e.provider.distribution, "version": e.provider.version}
            for e in runtime.registries.used()]


def record_plugins(run: RunFolder, runtime: Runtime) -> list[dict[str, Any]]:
    """Merge what ``runtime`` used into ``run.json``'s ``plugins``; returns the merged list."""
    info = run.info
    merged = {(p["kind"], p["type"]): p for p in info.get(PLUGINS_KEY) or []
              if isinstance(p, dict) and "kind" in p and "type" in p}
    merged.update({(p["kind"], p["type"]): p for p in plugins_used(runtime)})
    plugins = [merged[key] for key in sorted(merged)]
    if plugins != info.get(PLUGINS_KEY):
        write_json(run.path / RUN_FILE, {**info, PLUGINS_KEY: plugins})
    return plugins


def distributions(plugins: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Distribution -> its version and the types it gave this run (``in-process`` for a
    plugin registered without one, e.g. in a test)."""
    found: dict[str, dict[str, Any]] = {}
    for plugin in plugins:
        name = plugin.get("distribution") or f"in-process plugin {plugin.get('plugin')}"
        entry = found.setdefault(name, {"version": plugin.get("version"), "types": []})
        entry["types"].append(f"{plugin['kind']} {plugin['type']}")
    return dict(sorted(found.items()))
