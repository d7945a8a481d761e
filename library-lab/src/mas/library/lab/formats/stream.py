"""Reading the items of a top-level JSON array one at a time, without loading the file.

The public benchmark files are one JSON array each, and LongMemEval's ``_m`` file holds
gigabytes: the reader parses one element at a time from a growing buffer, so memory is
bounded by the largest element (:data:`MAX_ITEM_BYTES`), and a ``limit`` stops reading
after that many elements. Every problem names the file and the element (``[3]``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from mas.runtime.errors import ManifestError, Problem

CHUNK = 1 << 20
"""Bytes read at a time."""

MAX_ITEM_BYTES = 256 << 20
"""Largest element accepted (LongMemEval's biggest instances are a few MB)."""

_WHITESPACE = " \t\r\n"
_NUMBER = "0123456789.eE+-"


def json_array_items(path: Path, source: str, *, limit: int | None = None) -> Iterator[Any]:
    """The elements of the JSON array in ``path``, in order (the first ``limit`` only).

    :raises ManifestError: unreadable, not UTF-8, not an array, an element that is not
        valid JSON or larger than :data:`MAX_ITEM_BYTES`.
    """
    try:
        # utf-8-sig: a byte-order mark before the array (some editors write one) is skipped.
        with Path(path).open(encoding="utf-8-sig") as handle:
            yield from _ArrayReader(handle, source).items(limit)
    except OSError as exc:
        raise ManifestError([Problem(source, "", f"cannot read dataset: {exc.strerror}")]) from None


class _ArrayReader:
    """The element parser over one open file."""

    def __init__(self, handle: IO[str], source: str) -> None:
        self.handle = handle
        self.source = source
        self.buffer = ""
        self.position = 0
        self.eof = False
        self.decoder = json.JSONDecoder()

    def items(self, limit: int | None) -> Iterator[Any]:
        """Yield elements until the closing bracket or ``limit``."""
        if self._next_char() != "[":
            raise self._problem("", "a LoCoMo or LongMemEval file is one JSON array "
                                "(the file does not start with '[')")
        self.position += 1
        index = 0
        while limit is None or index < limit:
            char = self._next_char()
            if char == "]":
                return
            if index:
                if char != ",":
                    raise self._problem(f"[{index}]", "expected ',' or ']' after an element")
                self.position += 1
            yield self._element(index)
            index += 1

    def _element(self, index: int) -> Any:
        if self._next_char() == "":
            raise self._problem(f"[{index}]", "the file ends inside the array")
        while True:
            try:
                value, end = self.decoder.raw_decode(self.buffer, self.position)
            except json.JSONDecodeError as exc:
                if self.eof or not self._read(len(self.buffer)):
                    raise self._problem(f"[{index}]", f"not valid JSON ({exc.msg})") from None
                continue
            except RecursionError:
                raise self._problem(f"[{index}]", "nested too deeply") from None
            # A number is the one value whose end the parser cannot see: "1" of "12",
            # "0" of "0.5" may continue in the next chunk.
            if (isinstance(value, (int, float)) and not isinstance(value, bool)
                    and (end == len(self.buffer) or self.buffer[end] in _NUMBER)
                    and self._read(CHUNK)):
                continue
            self.position = end
            return value

    def _next_char(self) -> str:
        """The next character that is not white space ('' at the end of the file)."""
        while True:
            while self.position < len(self.buffer) and self.buffer[self.position] in _WHITESPACE:
                self.position += 1
            if self.position < len(self.buffer):
                return self.buffer[self.position]
            if not self._read(CHUNK):
                return ""

    def _read(self, size: int) -> bool:
        """Read about ``size`` more characters (at least one chunk); ``False`` at the end."""
        if self.eof:
            return False
        # Drop what is parsed: the buffer holds one element at most.
        self.buffer = self.buffer[self.position:]
        self.position = 0
        if len(self.buffer) > MAX_ITEM_BYTES:
            raise self._problem("", f"an element is not valid JSON, or larger than "
                                f"{MAX_ITEM_BYTES >> 20} MiB")
        try:
            more = self.handle.read(max(size, CHUNK))
        except UnicodeDecodeError as exc:
            raise self._problem("", f"not UTF-8 text ({exc.reason}); save the file as "
                                "UTF-8") from None
        if not more:
            self.eof = True
            return False
        self.buffer += more
        return True

    def _problem(self, location: str, message: str) -> ManifestError:
        return ManifestError([Problem(self.source, location, message)])
