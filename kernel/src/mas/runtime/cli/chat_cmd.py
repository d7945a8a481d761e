"""``mas-ctl chat``: talk to an agent in the terminal, into a run folder like ``run``'s.

Terminal habits of ``llm chat`` and aider: line editing and history (readline, when the
input is a terminal), ``/`` commands that never reach the model, Ctrl-C that cancels
what is in progress and returns to the prompt, Ctrl-D or ``/exit`` to save and quit.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from mas.runtime.cli._app import echo_masked, manifest_options, state_of
from mas.runtime.cli._otel import otel_option, trace_session
from mas.runtime.cli.run_cmd import (
    default_run_folder,
    open_in_folder,
    print_warnings,
    report_degradation,
)
from mas.runtime.cli.view_text import usage_lines
from mas.runtime.errors import MasError
from mas.runtime.session import AgentSession, record_events, write_transcript

EXIT_INTERRUPTED = 130
"""Exit code when Ctrl-C stops the chat before its first prompt (the shell's SIGINT code)."""

HISTORY_FILE = "chat_history.txt"
"""Input lines of the run folder's chats, for Up/Down across resumed chats."""

COMMANDS = {
    "/help": "list these commands",
    "/inspect": "the context budget of the last request (/inspect --json: the full view)",
    "/exit": "save and quit (also /quit, or Ctrl-D)",
}


@click.command("chat")
@manifest_options(many=False)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Run folder (default runs/<agent>/<timestamp>); an existing one resumes.",
)
@otel_option
@click.pass_context
def chat_command(
    ctx: click.Context,
    file: Path,
    overlays: tuple[Path, ...],
    infra: Path | None,
    config: Path | None,
    agent: str | None,
    out: Path | None,
    otel: bool,
) -> None:
    """Talk to FILE's agent; every turn is saved in a run folder. /help lists commands.

    A line starting with ``//`` is sent with one ``/`` removed. Ctrl-C cancels the
    answer being computed (the turn is not kept) or clears the line being typed.
    """
    _ctrl_c_from_its_terminal()
    runtime = state_of(ctx).runtime
    out = out or default_run_folder(file, overlays, infra, config, agent)
    session = open_in_folder(runtime, file, overlays, infra, config, agent, out)
    try:
        session.engine.prepare()
    except KeyboardInterrupt:
        echo_masked("interrupted while loading the model libraries; nothing was said", err=True)
        ctx.exit(EXIT_INTERRUPTED)
    close = record_events(runtime, out, lambda: session.session_id)
    stop_warnings = print_warnings(runtime)
    stop_tracing = trace_session(runtime, otel, session)
    save_history = _line_editing(out / HISTORY_FILE)
    _ctrl_c_to_the_main_thread()
    resumed = f", resuming after turn {session.turns}" if session.turns else ""
    echo_masked(
        f"{session.agent_name} on {session.engine.model} (session {session.session_id}"
        f"{resumed}); run folder {out}; /help for commands"
    )
    try:
        _loop(session)
    finally:
        threading.setprofile(None)
        save_history()
        stop_warnings()
        lost_spans = stop_tracing()
        write_transcript(out, session)
        close()
    echo_masked(f"run folder: {out}")
    report_degradation(session, allow=False, lost_spans=lost_spans)


def _loop(session: AgentSession) -> None:
    while True:
        try:
            if not _step(session):
                return
        except KeyboardInterrupt:
            # At the prompt, or between a reply and the next prompt: nothing to cancel.
            echo_masked("\n(/exit or Ctrl-D quits)")


def _step(session: AgentSession) -> bool:
    """Read one line and act on it; False when the chat should end."""
    try:
        line = input("you> ")
    except EOFError:
        echo_masked()
        return False
    text = line.strip()
    if text.startswith("/") and not text.startswith("//"):
        return not _command(session, text)
    if not text:
        return True
    message = line[1:] if text.startswith("//") else line
    try:
        answer = session.send(message).answer
    except KeyboardInterrupt:
        echo_masked("\ninterrupted: that turn was not kept", err=True)
        return True
    except MasError as exc:
        # The turn is not committed; the user may retry or change course.
        echo_masked(f"error: {exc} (that turn was not kept)", err=True)
        return True
    echo_masked(f"{session.agent_name}> {answer}")
    return True


def _command(session: AgentSession, text: str) -> bool:
    """Run a ``/`` command; True when the chat should end."""
    name, _, rest = text.partition(" ")
    if name in ("/exit", "/quit"):
        return True
    if name == "/help":
        for command, what in COMMANDS.items():
            echo_masked(f"  {command:<10} {what}")
        echo_masked("  //text     send text that starts with '/'")
    elif name == "/inspect" and rest.strip() in ("", "--json"):
        view = session.inspect_context().to_dict()
        if rest.strip() == "--json":
            echo_masked(json.dumps(view, indent=2))
        else:
            if view.get("window") is None:  # no request yet: what the manifest resolved
                settings = session.settings
                view.update(window=settings.window, window_source=settings.window_source,
                            reserve=settings.reserve)
            for row in usage_lines(view):
                echo_masked(row)
    else:
        echo_masked(f"unknown command {text!r}; /help lists the commands", err=True)
    return False


def _ctrl_c_from_its_terminal() -> None:
    """Take Ctrl-C when the chat is its terminal's foreground job, though started deaf to it.

    A non-interactive shell starts a command put in the background (``&``) with SIGINT
    ignored, the ignore survives exec, and Python then installs no KeyboardInterrupt
    handler: every Ctrl-C the chat promises would be lost without a word. A job shell
    gives its foreground job SIGINT back; the chat does the same when the terminal's
    foreground process group is its own, since the Ctrl-C typed there is meant for it.
    """
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        return
    try:
        foreground = os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except (OSError, ValueError, AttributeError):  # not a terminal; no job control (Windows)
        return
    if foreground:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _ctrl_c_to_the_main_thread() -> None:
    """Make every thread started from now on (litellm's workers) block SIGINT.

    The kernel may hand a process's SIGINT to any thread that does not block it; one that
    lands on a worker leaves the main thread waiting in readline or on a socket, and that
    Ctrl-C is lost. A thread's first Python call blocks it there, once.
    """
    if not hasattr(signal, "pthread_sigmask"):  # no POSIX threads' signal masks (Windows)
        return

    def block(frame: Any, event: str, arg: Any) -> None:
        sys.setprofile(None)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})

    threading.setprofile(block)


def _line_editing(history: Path) -> Callable[[], None]:
    """Give ``input()`` line editing and history when on a terminal; returns the saver."""
    if not sys.stdin.isatty():
        # Piped input: readline would only add escape sequences to the output.
        return lambda: None
    try:
        import readline
    except ImportError:  # Python built without readline (Windows): plain input()
        return lambda: None
    readline.set_history_length(1000)
    # The line history is a convenience: a file that cannot be read or written (a folder
    # in its place, a full disk) costs the arrow keys' memory, never the chat or its
    # transcript, and is said.
    try:
        if history.is_file():
            readline.read_history_file(history)
    except OSError as exc:
        echo_masked(f"warning: {history}: earlier lines not read ({exc.strerror or exc})",
                    err=True)

    def save() -> None:
        try:
            readline.write_history_file(history)
        except OSError as exc:
            echo_masked(f"warning: {history}: this chat's lines not saved "
                        f"({exc.strerror or exc})", err=True)

    return save
