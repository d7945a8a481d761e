"""The ``mas-ctl`` click group, its shared state and error handling."""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import click

from mas.runtime.errors import ManifestError, MasError, ModelCallError, Problem, StorageError
from mas.runtime.runtime import Runtime
from mas.runtime.secrets import install_log_masking, mask

EXIT_USER_ERROR = 2
"""Bad input: a manifest, an option, a data file; or a refused path."""
EXIT_PROVIDER = 4
"""A model call failed for good (authentication, a provider error after the retries)."""
EXIT_STORAGE = 5
"""A file could not be written or read: disk full, permissions, a full SQLite cache."""


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
@click.option(
    "--plugins-dir",
    metavar="DIR",
    help="Load each DIR/*.py as a one-file plugin (as MAS_PLUGINS_DIR does).",
)
@click.version_option(package_name="mas-runtime", prog_name="mas-ctl")
def cli(verbose: bool, plugins_dir: str | None) -> None:
    """Keep LLM agents inside their context window, and measure what it costs."""


@contextmanager
def handle_errors(verbose: bool) -> Iterator[None]:
    """Print errors as one masked line each and exit with the code of their kind
    (docs/run-folder.md, "Exit codes"); ``verbose`` adds tracebacks (masked too)."""
    install_log_masking()
    try:
        yield
    except ManifestError as exc:
        _fail(verbose, [problem.format() for problem in exc.problems], EXIT_USER_ERROR)
    except ModelCallError as exc:
        _fail(verbose, [f"error: {exc}"], EXIT_PROVIDER)
    except StorageError as exc:
        _fail(verbose, [f"error: {exc}"], EXIT_STORAGE)
    except MasError as exc:
        _fail(verbose, [f"error: {exc}"], EXIT_USER_ERROR)


def echo_masked(text: str = "", *, err: bool = False) -> None:
    """``click.echo`` of ``text`` with every key masked: what a command prints may quote a
    model's reply, and a reply may quote the key (issue 26, item 9)."""
    click.echo(mask(text), err=err)


def _fail(verbose: bool, lines: list[str], code: int) -> None:
    if verbose:
        echo_masked(traceback.format_exc(), err=True)
    for line in lines:
        echo_masked(line, err=True)
    sys.exit(code)


@contextmanager
def problems_as_json(enabled: bool) -> Iterator[None]:
    """With ``enabled``, a :class:`ManifestError` is printed as JSON on stdout, then exit 2.

    The document is ``{"ok": false, "problems": [...]}``, one entry per problem with its
    source, location, message, value (when one was found) and the one-line text; a
    ``--json`` command stays machine-readable when its input is bad.
    """
    try:
        yield
    except ManifestError as exc:
        if not enabled:
            raise
        exit_with_problems_json(exc.problems)


def exit_with_problems_json(problems: Sequence[Problem]) -> NoReturn:
    """Print ``{"ok": false, "problems": [...]}`` on stdout and exit 2 (bad input)."""
    listed = [problem.as_dict() for problem in problems]
    click.echo(json.dumps({"ok": False, "problems": listed}, indent=2, default=repr))
    sys.exit(EXIT_USER_ERROR)


def usage_problem(exc: click.UsageError) -> Problem:
    """A command-line error (a missing file, a bad option) as a :class:`Problem`; click's
    message already names the argument or option."""
    return Problem("<command line>", "", exc.format_message())


JSON_OPTION = click.option(
    "--json", "as_json", is_flag=True, help="Machine-readable output: one JSON document on stdout."
)
"""The ``--json`` flag of every command that reports."""


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
