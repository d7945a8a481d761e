"""Reading user JSON-lines files (``--input`` turns, lab datasets) without a traceback.

Whatever a line holds, the reader reports one problem naming the file and the line: bytes
that are not UTF-8, JSON that is not valid, nested deeper than :data:`MAX_DEPTH`, or a
string with a lone surrogate (``"\\ud800"``), which could be parsed but never written back
as UTF-8.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mas.runtime.errors import ManifestError, Problem
from mas.runtime.paths import UnreadableFileError, read_regular

MAX_DEPTH = 100
"""Deepest nesting of lists and objects accepted on one line."""
MAX_FILE_BYTES = 256 << 20
"""Largest JSON-lines file read (256 MiB); a pipe or device is refused whatever its size."""
BOM = "\ufeff"
"""The byte-order mark some editors (Notepad) put before a UTF-8 file's text."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def read_lines(path: Path, source: str | None = None, what: str = "file") -> list[str]:
    """The lines of a UTF-8 text file (a leading byte-order mark is not part of them).

    :param source: how errors name the file (default: the path).
    :param what: what the file is, in the error (``cannot read dataset: ...``).

    :raises ManifestError: unreadable, not a regular file, larger than
        :data:`MAX_FILE_BYTES`, or not UTF-8 (naming the line of the first bad byte).
    """
    name = source or str(path)
    try:
        data = read_regular(Path(path), MAX_FILE_BYTES)
    except UnreadableFileError as exc:
        raise ManifestError([Problem(name, "", f"cannot read {what}: {exc.reason}")]) from None
    except OSError as exc:
        raise ManifestError([Problem(name, "", f"cannot read {what}: {exc.strerror}")]) from None
    try:
        # A byte-order mark is how some editors start a UTF-8 file: it is not line 1's text.
        return data.decode("utf-8").removeprefix(BOM).splitlines()
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ManifestError([Problem(
            name, f"line {line}", f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
            f"{exc.start}); save the file as UTF-8")]) from None


def parse_line(line: str) -> Any:
    """One JSON value from one line.

    :raises ValueError: a one-line reason (invalid JSON, too deep, lone surrogate).
    """
    # Count openers before parsing: json.loads recurses once per level, and 200,000
    # levels exhaust the stack (RecursionError) long before the parser would complain.
    if nesting_depth(line, MAX_DEPTH) > MAX_DEPTH:
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep")
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg})") from None
    if any(_SURROGATE.search(text) for text in _strings(value)):
        raise ValueError("holds a lone surrogate (such as \\ud800), which is not Unicode text")
    return value


def nesting_depth(line: str, bound: int | None = None) -> int:
    """Deepest bracket nesting outside strings, in one pass without decoding.

    :param bound: a line with no more openers (``[``, ``{``) than this returns their
        count at once, an upper bound of its depth that is within the bound: the pass is
        only paid for lines that might nest deeper.
    """
    openers = line.count("[") + line.count("{")
    if bound is not None and openers <= bound:
        return openers
    depth = deepest = 0
    for char in _STRING.sub("", line):
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def _strings(value: Any) -> Iterator[str]:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
