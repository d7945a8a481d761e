"""``mas-ctl inspect RUN_DIR``: the ContextUsageView saved in a run folder."""

from __future__ import annotations

import json
from pathlib import Path

import click

from mas.runtime.control import saved_view


@click.command("inspect")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
def inspect_command(run_dir: Path) -> None:
    """Print the latest ContextUsageView of RUN_DIR (numbers and metadata only)."""
    click.echo(json.dumps(saved_view(run_dir), indent=2))

