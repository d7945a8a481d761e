"""The ``mas-ctl`` click group, its shared state and error handling."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from mas.runtime.errors import ManifestError, MasError
from mas.runtime.runtime import Runtime

EXIT_USER_ERROR = 2


@dataclass
class CliState:
    """What every subcommand shares: the runtime (plugins and registries)."""

    runtime: Runtime

    @classmethod
    def create(cls) -> CliState:
        """A state with a fresh runtime over the installed plugins."""
        return cls(runtime=Runtime.create())


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", is_flag=True, help="INFO logs, and tracebacks on errors.")
@click.version_option(package_name="mas-runtime", prog_name="mas-ctl")
def cli(verbose: bool) -> None:
    """Keep LLM agents inside their context window, and measure what it costs."""


@contextmanager
def handle_errors(verbose: bool) -> Iterator[None]:
    """Print user errors as one line per problem and exit 2; ``verbose`` adds tracebacks."""
    try:
        yield
    except ManifestError as exc:
        if verbose:
            traceback.print_exc()
        for problem in exc.problems:
            click.echo(problem.format(), err=True)
        sys.exit(EXIT_USER_ERROR)
    except MasError as exc:
        if verbose:
            traceback.print_exc()
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_USER_ERROR)


def state_of(ctx: click.Context) -> CliState:
    """The :class:`CliState` of the running command."""
    obj = ctx.find_root().obj
    if not isinstance(obj, CliState):
        obj = CliState.create()
        ctx.find_root().obj = obj
    return obj


EXISTING_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)
"""A click type for a manifest or data file that must exist."""

_MANIFEST_OPTIONS = [
    click.option(
        "--overlay",
        "overlays",
        multiple=True,
        type=EXISTING_FILE,
        help="Overlay file (repeatable, applied in order).",
    ),
    click.option(
        "--infra", type=EXISTING_FILE, help="Infra manifest (windows, pricing, endpoints)."
    ),
    click.option(
        "--config",
        type=EXISTING_FILE,
        help="Local config.yaml (defaults.model). Default: $MAS_CONFIG, then ./config.yaml.",
    ),
]


def manifest_options(*, many: bool) -> Callable[[Any], Any]:
    """Decorate a command with its manifest argument(s) and --overlay/--infra/--config.

    :param many: ``FILES...`` (compile, validate) rather than one ``FILE`` plus ``--agent``.
    """
    argument = (
        click.argument("files", nargs=-1, required=True, type=EXISTING_FILE)
        if many
        else click.argument("file", type=EXISTING_FILE)
    )
    extra = [] if many else [click.option("--agent", help="Agent name, when FILE holds several.")]

    def decorate(func: Any) -> Any:
        for option in reversed([argument, *_MANIFEST_OPTIONS, *extra]):
            func = option(func)
        return func

    return decorate
