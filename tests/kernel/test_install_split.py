"""Test fixture plugins stay out of the user's venv (issue 14.3).

``make install`` and ``make demo`` install the product only; ``make test`` adds the tools
and the fixture plugins, which register types (``first_words``) a user may well write.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ("./tests/fixtures/mas-test-plugin", "./library-standard/examples/plugins/keyword-summarizer")


def requirement_lines(name: str) -> list[str]:
    """The non-comment lines of a requirements file at the root."""
    text = (ROOT / name).read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def pip_recipes(target: str) -> list[str]:
    """The pip commands into .venv ``make TARGET`` would run on a fresh clone (printed only)."""
    done = subprocess.run(
        ["make", "-B", "-n", target], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return [
        line
        for line in done.stdout.splitlines()
        if line.startswith(".venv/bin/python -m pip install") and " -r " in line
    ]


def test_product_requirements_hold_the_four_distributions_only() -> None:
    assert requirement_lines("requirements.txt") == [
        "-e ./kernel",
        "-e ./library-standard",
        "-e ./library-eval",
        "-e ./library-lab",
    ]
    dev = requirement_lines("requirements-dev.txt")
    assert dev[0] == "-r requirements.txt"
    assert not [line for line in dev if line.startswith("-e")]


def test_fixtures_are_installed_for_tests_only() -> None:
    test = requirement_lines("requirements-test.txt")
    assert test[0] == "-r requirements-dev.txt"
    assert [line.removeprefix("-e ") for line in test if line.startswith("-e")] == list(FIXTURES)
    for path in FIXTURES:
        assert (ROOT / path / "pyproject.toml").is_file()


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize(
    ("target", "requirements"),
    [
        ("install", "requirements.txt"),
        ("demo", "requirements.txt"),
        ("test", "requirements-test.txt"),
        ("lint", "requirements-test.txt"),
    ],
)
def test_each_make_target_installs_what_it_needs(target: str, requirements: str) -> None:
    [recipe] = pip_recipes(target)
    assert re.search(rf"-r {re.escape(requirements)}$", recipe), recipe
