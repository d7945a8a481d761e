"""How ``mas-ctl`` prints log records on a terminal.

Without ``-v`` a warning is for the person at the terminal: ``warning: <message>``, wrapped
to at most 100 columns with the continuation lines indented, so it reads beside the
progress bar and the tables that already fit 100 columns. When stderr is not a terminal
(a pipe, a log file), each record stays on one line, for grep and log collectors. With
``-v`` the record keeps its level and logger name on one line, for whoever is tracing
where it came from.
"""

from __future__ import annotations

import logging
import shutil
import sys
import textwrap

MAX_COLUMNS = 100
"""The widest line the terminal form prints, whatever the terminal's own width."""

VERBOSE_FORMAT = "%(levelname)s %(name)s: %(message)s"
"""The ``-v`` form: level and logger name, unwrapped."""


def terminal_columns() -> int:
    """The terminal's width, capped at :data:`MAX_COLUMNS` (and never below 40)."""
    return max(40, min(MAX_COLUMNS, shutil.get_terminal_size((MAX_COLUMNS, 24)).columns))


class TerminalFormatter(logging.Formatter):
    """``warning: …`` wrapped to the terminal; the exception, if any, left as logging prints it."""

    def __init__(self, columns: int | None = None) -> None:
        super().__init__()
        self.columns = columns
        """Wrap width; ``None``: one line per record."""

    def format(self, record: logging.LogRecord) -> str:
        """The record's message behind its level in lower case, wrapped to ``columns``."""
        head = f"{record.levelname.lower()}: "
        if self.columns is None:
            text = head + record.getMessage()
            return text + ("\n" + self.formatException(record.exc_info)
                           if record.exc_info else "")
        paragraphs = record.getMessage().splitlines() or [""]
        lines: list[str] = []
        for number, paragraph in enumerate(paragraphs):
            lines.extend(textwrap.wrap(
                paragraph, width=self.columns,
                initial_indent=head if number == 0 else "  ",
                subsequent_indent="  ",
                break_long_words=False, break_on_hyphens=False,
            ) or [head.rstrip() if number == 0 else ""])
        text = "\n".join(lines)
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


def configure_logging(verbose: bool) -> None:
    """Send log records to stderr: INFO and the long form with ``-v``, else warnings, wrapped
    on a terminal."""
    handler = logging.StreamHandler()
    wrap = sys.stderr.isatty()
    handler.setFormatter(
        logging.Formatter(VERBOSE_FORMAT) if verbose
        else TerminalFormatter(terminal_columns() if wrap else None)
    )
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, handlers=[handler])
