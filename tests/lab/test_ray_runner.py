"""The ray backend's cases (``ray_cases.py``) and docs/lab.md's worked example run in a
private network namespace.

Ray binds the host's routable address, never 127.0.0.1 (it ignores an override). In a
namespace whose only interface is loopback that address *is* 127.0.0.1, so the real local
Ray instance the cases start sends traffic to loopback only, as every test here must.
"""

from __future__ import annotations

import os
import shutil
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


def test_the_worked_example_runs_as_written_against_a_local_head(tmp_path: Path) -> None:
    # The guide's shell block as it stands, from a copy of the repository's examples. Its
    # own processes (so its `ray stop` stops only its head) and its own /tmp/ray (so
    # `--address auto` finds that head, not another Ray of this machine).
    section = (ROOT / "docs" / "lab.md").read_text().split("### Worked example on a local head")[1]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    assert block.startswith("ray start --head") and block.rstrip().endswith("ray stop")
    shutil.copytree(ROOT / "library-lab" / "examples", tmp_path / "library-lab" / "examples")
    (tmp_path / "block.sh").write_text("set -e\n" + block)
    bin_dir = Path(sys.executable).parent  # the activated .venv of the guide
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    argv = ["unshare", "--pid", "--fork", "--mount-proc", "--propagation", "private", "sh", "-c",
            "mkdir -p /tmp/ray && mount -t tmpfs tmpfs /tmp/ray && exec bash block.sh"]
    try:
        done = run_in_loopback_namespace(argv, timeout=600, cwd=str(tmp_path), env=env)
    except RuntimeError as exc:
        pytest.skip(str(exc))
    report = done.stdout[-4000:] + done.stderr[-4000:]
    assert done.returncode == 0, report
    assert "identical" in done.stdout.splitlines(), report
    assert "report: runs/ray/context-ablation/" in done.stdout, report
