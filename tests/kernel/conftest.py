"""Kernel test helpers: a throwaway venv that sees the shared one (``overlay_venv``)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path

import pytest

SHIMS = {
    "pip": "from pip._internal.cli.main import main",
    "mas-ctl": "from mas.runtime.cli import main",
    "pytest": "from pytest import console_main as main",
}


def make_overlay_venv(root: Path) -> dict[str, str]:
    """A new venv at ``root`` that also sees the test venv's packages; returns its env.

    What is pip-installed into it lands in ``root`` only, so a test can install a plugin
    the way a user does without changing the venv the rest of the suite shares. Its
    ``bin`` has ``pip``, ``mas-ctl`` and ``pytest`` and comes first on ``PATH``. Builds run
    without isolation and pip never reaches an index: nothing is downloaded.
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    shared = sysconfig.get_paths()["purelib"]
    # addsitedir, not a bare path line: the shared venv's own .pth files (its editable
    # installs) must be processed too.
    Path(site, "_shared_test_venv.pth").write_text(f"import site; site.addsitedir({shared!r})\n")
    for name, line in SHIMS.items():
        script = root / "bin" / name
        script.write_text(f"#!{python}\nimport sys\n{line}\nsys.exit(main())\n")
        script.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MAS_CONFIG")}
    env.update(
        PATH=f"{root / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        VIRTUAL_ENV=str(root),
        PIP_NO_BUILD_ISOLATION="0",
        PIP_NO_INDEX="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
    )
    return env


@pytest.fixture
def overlay_venv(tmp_path: Path) -> Callable[[], dict[str, str]]:
    """``overlay_venv()`` makes a throwaway venv under tmp_path and returns its environment."""
    return lambda: make_overlay_venv(tmp_path / "venv")
