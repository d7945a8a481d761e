"""Where a plugin went wrong, and telling the user once.

A plugin's fault is reported with the file and line in the plugin's own code, not the
kernel's or pluggy's frame that caught it: that is the line its author has to fix.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import threading
import traceback
from pathlib import Path

import pluggy

from mas.runtime.errors import PluginLoadError, PluginTimeoutError

log = logging.getLogger("mas.runtime.plugins")

# Directories whose frames are machinery around a plugin, never the plugin's own line.
_MACHINERY = tuple(
    str(Path(file).resolve().parent)
    for file in (pluggy.__file__, importlib.__file__, __file__)
    if file
)

# Runtimes are cheap and a process may build several (the lab builds one per worker);
# the user should read each fault once, not once per runtime.
_reported: set[str] = set()
_reported_lock = threading.Lock()


def package_of(plugin: object) -> str | None:
    """The package a plugin's code lives in: a module's parent package, else its own name."""
    name = getattr(plugin, "__name__", None) if inspect.ismodule(plugin) else None
    name = name or getattr(plugin, "__module__", None)
    if not isinstance(name, str):
        return None
    parent = name.rpartition(".")[0]
    return parent or name


def fault_location(
    exc: BaseException, package: str | None, default: object = None
) -> tuple[str | None, int | None]:
    """File and line of ``exc`` in the plugin's code (``package``), else its innermost frame.

    A syntax error carries its own position; otherwise the innermost frame inside
    ``package`` wins, then (when given) the definition of ``default``, the plugin function
    that was called (an exception raised on calling it, such as a ``TypeError`` for its
    signature, has no frame of its own), then the innermost frame that is not import or
    hook machinery.
    """
    if isinstance(exc, SyntaxError) and exc.filename:
        return exc.filename, exc.lineno
    # A plugin past its deadline raised nothing: where its thread hangs is its line.
    stack = exc.stack if isinstance(exc, PluginTimeoutError) else [
        (frame.f_code.co_filename, lineno, frame.f_globals.get("__name__"))
        for frame, lineno in traceback.walk_tb(exc.__traceback__)
    ]
    frames = [f for f in stack if not f[0].startswith("<")]
    if package:
        mine = [f for f in frames if f[2] == package or str(f[2]).startswith(package + ".")]
        if mine:
            return mine[-1][0], mine[-1][1]
    if default is not None:
        file, line = function_location(default)
        if file:
            return file, line
    outside = [f for f in frames if not _is_machinery(f[0])]
    chosen = outside or frames
    return (chosen[-1][0], chosen[-1][1]) if chosen else (None, None)


def function_location(function: object) -> tuple[str | None, int | None]:
    """Source file and first line of a hook implementation."""
    try:
        file = inspect.getsourcefile(function)  # type: ignore[arg-type]
    except TypeError:
        return None, None
    code = getattr(function, "__code__", None)
    return file, getattr(code, "co_firstlineno", None)


def report(error: PluginLoadError) -> None:
    """Log ``error`` and how to skip its plugin, once per process; ``-v`` adds the traceback."""
    verbose = log.isEnabledFor(logging.INFO)  # mas-ctl -v
    warn_once(f"{error}; {error.hint}", error.reason if verbose else None)


def warn_once(text: str, exc_info: BaseException | None = None) -> None:
    """Log ``text`` as a warning unless this process already logged the same line."""
    with _reported_lock:
        if text in _reported:
            return
        _reported.add(text)
    log.warning("%s", text, exc_info=exc_info)


def _is_machinery(filename: str) -> bool:
    resolved = str(Path(filename).resolve())
    return any(resolved.startswith(root + "/") for root in _MACHINERY)
