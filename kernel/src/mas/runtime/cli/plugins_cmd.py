"""``mas-ctl plugins``: JSON of every loaded plugin and the types it provides."""

from __future__ import annotations

import json
from typing import Any

import click

from mas.runtime.cli._app import state_of
from mas.runtime.runtime import Runtime


def describe_plugins(runtime: Runtime) -> dict[str, Any]:
    """Plugins (distribution, version, entry point, module, hooks, types) and load failures."""
    provided: dict[str, dict[str, list[str]]] = {}
    for registry in runtime.registries:
        for entry in registry:
            kinds = provided.setdefault(entry.provider.name, {})
            kinds.setdefault(registry.kind, []).append(entry.name)
    plugins = []
    for name, plugin in runtime.pm.list_name_plugin():
        if plugin is None:
            continue
        info = runtime.pm.info(name)
        hooks = sorted(caller.name for caller in runtime.pm.get_hookcallers(plugin) or [])
        plugins.append(
            {
                "name": name,
                "distribution": info.distribution,
                "version": info.version,
                "module": getattr(plugin, "__name__", type(plugin).__name__),
                "hooks": hooks,
                "types": provided.get(name, {}),
            }
        )
    plugins.sort(key=lambda p: (p["name"] != "builtin", p["name"]))
    failures = [
        {
            "entry_point": f.entry_point,
            "distribution": f.distribution,
            "version": f.version,
            "error": str(f),
        }
        for f in runtime.pm.failures
    ]
    return {"plugins": plugins, "failed": failures}


@click.command("plugins")
@click.pass_context
def plugins_command(ctx: click.Context) -> None:
    """Print every loaded plugin and the types it registered, as JSON."""
    click.echo(json.dumps(describe_plugins(state_of(ctx).runtime), indent=2))
