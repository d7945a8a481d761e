"""``mas-ctl plugins [TYPE]``: JSON of every loaded plugin and the types it provides, or of
one type: its description and the JSON Schema of its params."""

from __future__ import annotations

import difflib
import json
from typing import Any

import click

from mas.runtime.cli._app import state_of
from mas.runtime.errors import UnknownTypeError
from mas.runtime.registry import KINDS, QUALIFIER, TypeEntry, fold_type_name
from mas.runtime.runtime import Runtime

EXIT_PLUGIN_FAULT = 1
"""Exit code of ``mas-ctl plugins`` when any plugin was left out because of a fault."""


def describe_plugins(runtime: Runtime) -> dict[str, Any]:
    """Plugins (distribution, version, entry point, module, hooks, types), load failures,
    and the names two plugins registered (each refused, with the qualified names to use)."""
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
            "group": f.group,
            "distribution": f.distribution,
            "version": f.version,
            "stage": f.stage,
            "file": f.file,
            "line": f.line,
            "error": str(f),
            "hint": f.hint,
        }
        for f in runtime.pm.failures
    ]
    clashes = [
        {
            "kind": registry.kind,
            "name": key,
            "plugins": [h.provider.name for h in holders],
            "distributions": [h.provider.distribution for h in holders],
            "choose": [f"{h.provider.name}{QUALIFIER}{key}" for h in holders],
        }
        for registry in runtime.registries
        for key, holders in sorted(registry.clashes.items())
    ]
    return {"plugins": plugins, "failed": failures, "clashes": clashes}


def describe_type(runtime: Runtime, name: str, kind: str | None) -> list[dict[str, Any]]:
    """Every registered type called ``name`` (in ``kind`` only, if given), with its schema;
    a name two plugins registered gives each of their types.

    :raises UnknownTypeError: no kind has the name; the closest match is suggested.
    """
    registries = [runtime.registries[kind]] if kind else list(runtime.registries)
    found: list[TypeEntry] = []
    for registry in registries:
        if fold_type_name(name) in registry.clashes:
            found.extend(registry.clashes[fold_type_name(name)])
        elif name in registry:
            found.append(registry.get(name))
    if not found:
        raise _unknown(runtime, name, kind)
    return [
        {
            "kind": entry.kind,
            "name": entry.name,
            "aliases": list(entry.aliases),
            "description": entry.description,
            "plugin": entry.provider.name,
            "distribution": entry.provider.distribution,
            "version": entry.provider.version,
            "params": entry.params.model_json_schema(),
        }
        for entry in found
    ]


def _unknown(runtime: Runtime, name: str, kind: str | None) -> UnknownTypeError:
    if kind:
        return runtime.registries[kind].unknown(name)
    names = sorted({n for registry in runtime.registries for n in registry.names()})
    close = difflib.get_close_matches(fold_type_name(name), names, n=1, cutoff=0.5)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return UnknownTypeError("registered", name, names, hint)


@click.command("plugins")
@click.argument("type_name", metavar="[TYPE]", required=False)
@click.option(
    "--kind",
    type=click.Choice(KINDS),
    help="Look TYPE up in this kind only (when two kinds share a name).",
)
@click.pass_context
def plugins_command(ctx: click.Context, type_name: str | None, kind: str | None) -> None:
    """Print every loaded plugin and the types it registered, as JSON.

    With TYPE, print that type instead: its kind, description, provider and the JSON
    Schema of its params (what a manifest may write under ``params:``). Plugins left out
    because of a fault are listed under ``failed`` with their error, and the command then
    exits 1.
    """
    runtime = state_of(ctx).runtime
    if type_name is not None:
        click.echo(json.dumps(describe_type(runtime, type_name, kind), indent=2))
        return
    click.echo(json.dumps(describe_plugins(runtime), indent=2))
    if runtime.pm.failures:
        ctx.exit(EXIT_PLUGIN_FAULT)
