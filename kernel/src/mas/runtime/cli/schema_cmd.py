"""``mas-ctl schema KIND``: the JSON Schema of a manifest kind."""

from __future__ import annotations

import json

import click
from pydantic import BaseModel

from mas.runtime.spec.experiment import Experiment, LocalConfig
from mas.runtime.spec.manifests import DOCUMENT_KINDS

SCHEMA_KINDS: dict[str, type[BaseModel]] = {
    **DOCUMENT_KINDS,
    "Experiment": Experiment,
    "Config": LocalConfig,
}


@click.command("schema")
@click.argument("kind", type=click.Choice(sorted(SCHEMA_KINDS), case_sensitive=False))
def schema_command(kind: str) -> None:
    """Print the JSON Schema of KIND (Agent, MAS, Infra, Overlay, Experiment, Config)."""
    canonical = {k.lower(): k for k in SCHEMA_KINDS}[kind.lower()]
    schema = SCHEMA_KINDS[canonical].model_json_schema(by_alias=True)
    click.echo(json.dumps(schema, indent=2))
