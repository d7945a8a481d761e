"""``mas-ctl``: compile, validate and inspect manifests; list plugins; print schemas.

User errors (bad manifests, unknown types) print one line per problem and exit 2 without
a traceback; ``-v`` shows the traceback and INFO logs. Plugins add subcommands through
``mas_register_cli_commands``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

import click

from mas.runtime._plugin_faults import function_location
from mas.runtime._plugins_dir import PLUGINS_DIR_ENV
from mas.runtime.cli._app import (
    CliState,
    cli,
    exit_with_problems_json,
    handle_errors,
    usage_problem,
)
from mas.runtime.cli.chat_cmd import chat_command
from mas.runtime.cli.compile_cmd import compile_command, validate_command
from mas.runtime.cli.inspect_cmd import inspect_command
from mas.runtime.cli.log_format import configure_logging
from mas.runtime.cli.plugins_cmd import plugins_command
from mas.runtime.cli.run_cmd import run_command
from mas.runtime.cli.schema_cmd import schema_command
from mas.runtime.cli.serve_cmd import serve_command
from mas.runtime.errors import MasError
from mas.runtime.registry import INSTALL_HINT

__all__ = ["CliState", "cli", "main"]

for _command in (
    compile_command,
    validate_command,
    plugins_command,
    schema_command,
    run_command,
    chat_command,
    inspect_command,
    serve_command,
):
    cli.add_command(_command)


def main(argv: Sequence[str] | None = None) -> Any:
    """Entry point of the ``mas-ctl`` script."""
    args = list(sys.argv[1:] if argv is None else argv)
    verbose = "-v" in args or "--verbose" in args
    configure_logging(verbose)
    with handle_errors(verbose):
        _use_plugins_dir(args)
        group = _with_plugin_commands(CliState.create())
        group.json_errors = "--json" in args
        return group.main(args=args, prog_name="mas-ctl", obj=group.state, standalone_mode=True)


def _use_plugins_dir(args: list[str]) -> None:
    # The plugins are loaded before click parses the command line (they add commands), so
    # --plugins-dir is read here; set as MAS_PLUGINS_DIR, lab workers load the folder too.
    for i, arg in enumerate(args):
        if not arg.startswith("-"):
            return  # the subcommand: what follows is its own
        if arg == "--plugins-dir" or arg.startswith("--plugins-dir="):
            folder = arg.partition("=")[2] if "=" in arg else next(iter(args[i + 1:]), "")
            if not os.path.isdir(folder):
                raise MasError(f"--plugins-dir: {folder!r} is not a directory")
            os.environ[PLUGINS_DIR_ENV] = folder
            return


class _Group(click.Group):
    state: CliState
    json_errors: bool = False
    """``--json`` was given: a command-line error is a JSON problem list too."""

    def invoke(self, ctx: click.Context) -> Any:
        """Run the subcommand; with ``--json``, its usage errors come out as JSON, exit 2."""
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            if not self.json_errors:
                raise
            exit_with_problems_json([usage_problem(exc)])


def _with_plugin_commands(state: CliState) -> _Group:
    group = _Group(
        name=cli.name,
        commands=dict(cli.commands),
        params=cli.params,
        help=cli.help,
        callback=cli.callback,
    )
    group.state = state
    runtime = state.runtime
    for entry in list(runtime.registries.cli_command):
        # A command that clashes or fails to build faults its plugin; mas-ctl still starts.
        if entry.provider.name in runtime.pm.failed_names():
            continue
        if entry.name in group.commands:
            file, line = function_location(entry.factory)
            runtime.fail_plugin(
                entry.provider.name,
                click.UsageError(f"registers command {entry.name!r}, which mas-ctl already has"),
                stage="command",
                file=file,
                line=line,
            )
            continue
        try:
            command = entry.factory()
        except BaseException as exc:  # SystemExit too; fail_factory lets Ctrl-C through
            runtime.fail_factory(entry, exc, stage="command")
            continue
        group.add_command(command, entry.name)
    for name, distribution in LIBRARY_COMMANDS.items():
        if name not in group.commands:
            group.add_command(_missing_command(name, distribution), name)
    return group


LIBRARY_COMMANDS = {"eval": "mas-library-eval", "lab": "mas-library-lab"}
"""Subcommands a library of this workspace adds, and the distribution that adds each."""


def _missing_command(name: str, distribution: str) -> click.Command:
    # Hidden stand-in, so `mas-ctl lab` without mas-library-lab says what to install
    # rather than click's bare "No such command".
    def missing(args: tuple[str, ...]) -> None:
        raise MasError(
            f"mas-ctl {name} comes with {distribution}, which is not installed or whose "
            f"plugin failed to load (see above); {INSTALL_HINT}"
        )

    return click.Command(
        name,
        callback=missing,
        params=[click.Argument(["args"], nargs=-1)],
        context_settings={"ignore_unknown_options": True, "help_option_names": []},
        hidden=True,
    )
