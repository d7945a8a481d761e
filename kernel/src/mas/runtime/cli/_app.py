"""The ``mas-ctl`` click group, its shared state and error handling."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

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
