"""``mas-ctl inspect RUN_DIR`` and ``mas-ctl serve --stdio`` (JSON-lines control)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from mas.runtime.errors import MasError
from mas.runtime.session import STATE, load_state


def saved_view(folder: Path) -> dict[str, Any]:
    """The ContextUsageView saved in a run folder's session file.

    :raises MasError: no session file, or no model call made yet.
    """
    path = Path(folder) / STATE
    if not path.is_file():
        raise MasError(f"{folder}: no {STATE} here; is it a session run folder?")
    view = load_state(path).get("context_usage")
    if view is None:
        raise MasError(f"{folder}: the session has made no model call yet")
    return dict(view)


@click.command("inspect")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
def inspect_command(run_dir: Path) -> None:
    """Print the latest ContextUsageView of RUN_DIR (numbers and metadata only)."""
    click.echo(json.dumps(saved_view(run_dir), indent=2))


def find_session(root: Path, session_id: str) -> Path | None:
    """The run folder under ``root`` whose session has ``session_id``."""
    for path in sorted(Path(root).rglob(STATE)):
        try:
            if load_state(path).get("session_id") == session_id:
                return path.parent
        except MasError:
            continue
    return None


def answer(request: Any, root: Path) -> dict[str, Any]:
    """The reply to one control request (``inspect_context`` or ``list_sessions``)."""
    if not isinstance(request, dict):
        return {"id": None, "error": {"message": "a request is a JSON object"}}
    ident = request.get("id")
    method, params = request.get("method"), request.get("params") or {}
    try:
        if method == "inspect_context":
            session_id = params.get("session_id")
            folder = find_session(root, str(session_id)) if session_id else None
            if folder is None:
                raise MasError(f"no session {session_id!r} under {root}")
            return {"id": ident, "result": saved_view(folder)}
        if method == "list_sessions":
            sessions = [load_state(p)["session_id"] for p in sorted(root.rglob(STATE))]
            return {"id": ident, "result": sessions}
        raise MasError(f"unknown method {method!r}; expected inspect_context or list_sessions")
    except MasError as exc:
        return {"id": ident, "error": {"message": str(exc)}}


@click.command("serve")
@click.option("--stdio", is_flag=True, required=True, help="Answer JSON-lines requests on stdin.")
@click.option(
    "--runs",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("runs"),
    show_default=True,
    help="Where run folders are.",
)
def serve_command(stdio: bool, runs: Path) -> None:
    """JSON-lines control: one request per line in, one reply per line out.

    Requests: {"id": 1, "method": "inspect_context", "params": {"session_id": "..."}} and
    {"id": 2, "method": "list_sessions"}.
    """
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except ValueError as exc:
            reply: dict[str, Any] = {"id": None, "error": {"message": f"not JSON: {exc}"}}
        else:
            reply = answer(request, runs)
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
