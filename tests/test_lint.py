"""The code stays ruff-clean and strict-mypy-clean (STYLE 13); `make lint` runs the same."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SOURCES = ["kernel/src", "library-standard/src", "library-eval/src", "library-lab/src"]


def test_ruff_is_clean() -> None:
    paths = ["kernel", "library-standard", "library-eval", "library-lab", "tests", "benchmarks"]
    done = subprocess.run([str(BIN / "ruff"), "check", *paths], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_strict_is_clean() -> None:
    done = subprocess.run([str(BIN / "mypy"), *SOURCES], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
