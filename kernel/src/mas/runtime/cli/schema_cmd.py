"""``mas-ctl schema``: the JSON Schema of a manifest kind, params of every registered type
included (third-party plugins too), printed or written one file per kind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import yaml
from pydantic import BaseModel

from mas.runtime.cli._app import state_of
from mas.runtime.spec.experiment import Experiment, LocalConfig
from mas.runtime.spec.manifests import DOCUMENT_KINDS
from mas.runtime.spec.schema import kind_schema

SCHEMA_KINDS: dict[str, type[BaseModel]] = {
    **DOCUMENT_KINDS,
    "Experiment": Experiment,
    "Config": LocalConfig,
}


@click.command("schema")
@click.argument("kind", required=False,
                type=click.Choice(sorted(SCHEMA_KINDS), case_sensitive=False))
@click.option("--all", "all_kinds", is_flag=True, help="Every kind (needs --out).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Write <kind>.schema.<format> files into this folder instead of printing.")
@click.option("--format", "fmt", type=click.Choice(["yaml", "json"]), default=None,
              help="File format: yaml when writing files (spec 000 names agent.schema.yaml), "
              "json when printing.")
@click.pass_context
def schema_command(ctx: click.Context, kind: str | None, all_kinds: bool, out: Path | None,
                   fmt: str | None) -> None:
    """Print the JSON Schema of KIND (Agent, MAS, Infra, Overlay, Experiment, Config), or
    with --all --out DIR write one file per kind."""
    if all_kinds == (kind is not None):
        raise click.UsageError("give one KIND, or --all with --out DIR")
    if all_kinds and out is None:
        raise click.UsageError("--all writes one file per kind: give --out DIR")
    canonical = {k.lower(): k for k in SCHEMA_KINDS}
    kinds = sorted(SCHEMA_KINDS) if all_kinds else [canonical[str(kind).lower()]]
    runtime = state_of(ctx).runtime
    schemas = {name: kind_schema(runtime, SCHEMA_KINDS[name]) for name in kinds}
    if out is None:
        click.echo(_render(schemas[kinds[0]], fmt or "json"))
        return
    out.mkdir(parents=True, exist_ok=True)
    for name, schema in schemas.items():
        # Fixed names from SCHEMA_KINDS: nothing user-written becomes a path.
        path = out / f"{name.lower()}.schema.{fmt or 'yaml'}"
        path.write_text(_render(schema, fmt or "yaml"), encoding="utf-8")
        click.echo(str(path))


def _render(schema: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(schema, indent=2)
    return str(yaml.safe_dump(schema, sort_keys=False, allow_unicode=True))
