"""Serving a :class:`Dispatcher` over a pair of byte streams, one bounded line at a time.

A line is read with a bound (:data:`MAX_LINE_BYTES`): a longer one is never held in
memory whole; it is read through to its newline, dropped, and answered with an invalid
request error under a null id, and the next line is served as usual.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import BinaryIO, TextIO

from mas.runtime.control._jsonrpc import INVALID_REQUEST, VERSION, Dispatcher

MAX_LINE_BYTES = 1 << 20
"""Longest input line, in bytes, its newline not counted."""

_CHUNK = 1 << 16


def bounded_lines(stream: BinaryIO, limit: int = MAX_LINE_BYTES) -> Iterator[bytes | None]:
    """Each line of ``stream`` (newline kept), or ``None`` for one longer than ``limit``."""
    while True:
        line = stream.readline(limit + 1)
        if not line:
            return
        if len(line) <= limit or line.endswith(b"\n") and len(line) == limit + 1:
            yield line
            continue
        while line and not line.endswith(b"\n"):  # drop the rest of the long line
            line = stream.readline(_CHUNK)
        yield None


def serve(dispatcher: Dispatcher, infile: BinaryIO, outfile: TextIO) -> None:
    """Answer every line of ``infile`` on ``outfile`` until end of input."""
    too_long = json.dumps({"jsonrpc": VERSION, "id": None, "error": {
        "code": INVALID_REQUEST,
        "message": f"Invalid Request: line longer than {MAX_LINE_BYTES} bytes"}})
    for line in bounded_lines(infile):
        reply = too_long if line is None else dispatcher.handle_line(line)
        if reply is not None:
            outfile.write(reply + "\n")
            outfile.flush()
