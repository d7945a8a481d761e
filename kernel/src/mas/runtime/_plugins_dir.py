"""One-file local plugins: each ``*.py`` of a folder loaded as a plugin module.

A user trying a summarizer need not package it: ``mas-ctl --plugins-dir DIR`` (or
``MAS_PLUGINS_DIR=DIR``) loads every ``DIR/*.py`` whose name does not start with ``_``,
in name order, after the installed plugins. Each file is a plugin named after its stem
(``headline.py`` is plugin ``headline``), with the file standing where a distribution
would, and its faults are contained like any plugin's.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

from mas.runtime.errors import MasError

PLUGINS_DIR_ENV = "MAS_PLUGINS_DIR"
"""A folder of one-file plugins: a path the user names, like ``--config``, not a switch."""
GROUP = "plugins-dir"
"""The group recorded for plugins loaded from the plugins folder."""
MODULE_PREFIX = "mas_plugins_dir."
"""Local files get module names of their own, so ``json.py`` in the folder never shadows
(nor is shadowed by) an importable module of that name."""


def plugins_dir(env: dict[str, str] | None = None) -> Path | None:
    """The folder named by ``MAS_PLUGINS_DIR``, or ``None`` when it is unset or empty.

    :raises MasError: the variable names something that is not a folder.
    """
    raw = (env if env is not None else os.environ).get(PLUGINS_DIR_ENV, "").strip()
    if not raw:
        return None
    folder = Path(raw).expanduser()
    if not folder.is_dir():
        raise MasError(f"{PLUGINS_DIR_ENV}: {raw!r} is not a directory")
    return folder


def plugin_files(folder: Path) -> list[Path]:
    """The plugin files of ``folder``: ``*.py`` not starting with ``_``, by name."""
    return sorted(p for p in folder.glob("*.py") if not p.name.startswith("_"))


def import_file(path: Path) -> ModuleType:
    """Import plugin file ``path`` as a module of its own (``mas_plugins_dir.<stem>``)."""
    name = MODULE_PREFIX + path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # as an import would: dataclasses and pickling look it up
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module

