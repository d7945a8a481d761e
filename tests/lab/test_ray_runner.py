"""The ray backend's cases (``ray_cases.py``) run in a private network namespace.

Ray binds the host's routable address, never 127.0.0.1 (it ignores an override). In a
namespace whose only interface is loopback that address *is* 127.0.0.1, so the real local
Ray instance the cases start sends traffic to loopback only, as every test here must.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mas.runtime.testing import run_in_loopback_namespace

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def test_the_ray_backend_cases_pass_with_loopback_as_the_only_network() -> None:
    argv = [sys.executable, "-m", "pytest", str(HERE / "ray_cases.py"), "-q", "-x",
            "-p", "no:cacheprovider"]
    try:
        done = run_in_loopback_namespace(argv, timeout=1200, cwd=str(ROOT))
    except RuntimeError as exc:  # not root and no unprivileged namespaces: say why
        pytest.skip(str(exc))
    report = done.stdout[-8000:] + done.stderr[-4000:]
    assert done.returncode == 0, report
    assert " passed" in done.stdout and " failed" not in done.stdout, report
