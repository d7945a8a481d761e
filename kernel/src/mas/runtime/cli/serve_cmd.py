"""``mas-ctl serve --stdio``: the JSON-RPC 2.0 control server (docs/control.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from mas.runtime.control import Dispatcher, SessionTree, serve


@click.command("serve")
@click.option("--stdio", is_flag=True, required=True, help="Speak JSON-RPC 2.0 on stdin/stdout.")
@click.option(
    "--runs",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=Path("runs"),
    show_default=True,
    help="The folder whose run folders (at any depth) are served.",
)
def serve_command(stdio: bool, runs: Path) -> None:
    """JSON-RPC 2.0 control: one message per line in, one reply per line out.

    Methods: list_sessions, session_status {session_id}, inspect_context {session_id}.
    Batches and notifications are accepted. Ends at end of input.
    """
    # Bytes in, so that a line that is not UTF-8 gets a parse error instead of ending
    # the server with a traceback; every line and reply is bounded (docs/control.md).
    serve(Dispatcher(SessionTree(runs).methods()), sys.stdin.buffer, sys.stdout)
