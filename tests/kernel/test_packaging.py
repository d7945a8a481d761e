"""Packaging of the four distributions (issue 14.10)."""

from __future__ import annotations

import subprocess
import sys

import importlib_metadata

import mas.runtime


def test_version_is_the_installed_distributions() -> None:
    assert mas.runtime.__version__ == importlib_metadata.version("mas-runtime")


def test_python_dash_m_is_mas_ctl() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mas.runtime", "--version"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"mas-ctl, version {mas.runtime.__version__}"
