"""``mas-ctl inspect RUN_DIR``: the ContextUsageView saved in a run folder, or with
``--html`` the session's timeline page (:mod:`mas.runtime.timeline`)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from mas.runtime.control import saved_view
from mas.runtime.errors import MasError
from mas.runtime.paths import UnsafePathError, contained


@click.command("inspect")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--html", "html", is_flag=True,
              help="Write the session timeline page (default RUN_DIR/timeline.html).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="With --html: the page's file, inside RUN_DIR or the current folder.")
def inspect_command(run_dir: Path, html: bool, out: Path | None) -> None:
    """Print the latest ContextUsageView of RUN_DIR (numbers and metadata only), or with
    --html write its timeline page and print the page's path."""
    if not html:
        if out is not None:
            raise MasError("--out: only with --html (the view is printed on stdout)")
        click.echo(json.dumps(saved_view(run_dir), indent=2))
        return
    from mas.runtime.timeline import write_timeline  # the page's code only when asked

    if out is not None:
        _check_out(run_dir, out)
    click.echo(str(write_timeline(run_dir, out)))


def _check_out(run_dir: Path, out: Path) -> None:
    # Like every other write of the project, the page stays inside a root: the run folder
    # or the folder the command runs in.
    for root in (run_dir, Path.cwd()):
        try:
            contained(root, out.parent)
            return
        except UnsafePathError:
            continue
    raise UnsafePathError(
        f"--out: {out} resolves to {out.resolve()}, outside {run_dir} and the current "
        "folder; refusing to write it (pick a path inside either)"
    )
