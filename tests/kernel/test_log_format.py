"""``mas-ctl``'s log lines on a terminal (issue 25 item 12): a warning fits 100 columns and
says ``warning:``; ``-v`` keeps the level and logger name on one line."""

from __future__ import annotations

import logging
import subprocess
import sys

from mas.runtime.cli.log_format import MAX_COLUMNS, TerminalFormatter

LONG = (
    "summarising: the kept turns and summary (6583 tokens) exceed the trigger (6000, "
    "summary_threshold); the summary is rewritten whenever history grows 10% past them. "
    "Lower keep_turns or raise summary_threshold for fewer summarizer calls."
)


def wrapped(columns: int) -> list[str]:
    """The long warning as the terminal form prints it at ``columns``."""
    record = logging.LogRecord("mas.library.standard.plugins.context.conversation",
                               logging.WARNING, __file__, 1, LONG, None, None)
    return TerminalFormatter(columns=columns).format(record).splitlines()


def test_a_long_warning_is_wrapped_within_100_columns_and_loses_no_word() -> None:
    lines = wrapped(MAX_COLUMNS)
    assert lines[0].startswith("warning: summarising: the kept turns")
    assert all(len(line) <= MAX_COLUMNS for line in lines)
    assert all(line.startswith("  ") for line in lines[1:])
    assert " ".join(line.strip() for line in lines).removeprefix("warning: ") == LONG


def test_a_narrow_terminal_narrows_the_wrap() -> None:
    lines = wrapped(60)
    assert max(len(line) for line in lines) <= 60
    assert len(lines) > 3


def emit(verbose: bool) -> list[str]:
    """What a fresh interpreter prints on stderr (a pipe) for one long warning."""
    script = (
        "import logging\n"
        "from mas.runtime.cli.log_format import configure_logging\n"
        f"configure_logging({verbose})\n"
        "logging.getLogger('mas.library.standard.plugins.context.conversation')"
        f".warning({LONG!r})\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={"PATH": ""}, timeout=60, check=True)
    return done.stderr.splitlines()


def test_verbose_keeps_the_logger_name_on_one_line() -> None:
    assert emit(verbose=True) == [
        f"WARNING mas.library.standard.plugins.context.conversation: {LONG}"
    ]


def test_a_pipe_gets_one_line_per_record() -> None:
    assert emit(verbose=False) == [f"warning: {LONG}"]


def test_the_traceback_of_a_logged_exception_is_kept() -> None:
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", None,
                                   sys.exc_info())
    text = TerminalFormatter(columns=80).format(record)
    assert text.startswith("error: failed\nTraceback")
    assert text.rstrip().endswith("RuntimeError: boom")
