"""Packaging of the four distributions (issue 14.10)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import importlib_metadata
import pytest
from packaging.requirements import Requirement

import mas.runtime

ROOT = Path(__file__).resolve().parents[2]
DISTRIBUTIONS = {
    "mas-runtime": "kernel",
    "mas-library-standard": "library-standard",
    "mas-library-eval": "library-eval",
    "mas-library-lab": "library-lab",
}


def test_version_is_the_installed_distributions() -> None:
    assert mas.runtime.__version__ == importlib_metadata.version("mas-runtime")


def test_python_dash_m_is_mas_ctl() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mas.runtime", "--version"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"mas-ctl, version {mas.runtime.__version__}"


def test_installed_litellm_is_inside_the_declared_range() -> None:
    # The upper bound is the series the suite runs on: a newer litellm is a deliberate
    # bump of kernel/pyproject.toml after this suite passed on it.
    required = [r for r in importlib_metadata.requires("mas-runtime") or [] if r.startswith("litellm")]
    [spec] = [Requirement(r).specifier for r in required]
    assert spec.contains(importlib_metadata.version("litellm"))
    assert any(s.operator == "<" for s in spec), "litellm has a tested upper bound"


def test_siblings_require_a_compatible_kernel() -> None:
    for name in ("mas-library-standard", "mas-library-eval", "mas-library-lab"):
        [kernel] = [
            Requirement(r) for r in importlib_metadata.requires(name) or [] if r.startswith("mas-runtime")
        ]
        assert kernel.specifier.contains(mas.runtime.__version__), name
        assert any(s.operator == "<" for s in kernel.specifier), name
        meta = importlib_metadata.metadata(name)
        assert meta["License-Expression"] == "Apache-2.0"
        assert meta.get_all("Classifier")


def test_license_is_apache_and_every_distribution_ships_it() -> None:
    text = (ROOT / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License") and "Version 2.0, January 2004" in text
    for folder in DISTRIBUTIONS.values():
        assert (ROOT / folder / "LICENSE").read_text() == text


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A wheel of each distribution, built offline from a copy of this checkout's folders.

    A build runs in its source tree and writes ``build/`` and ``*.egg-info`` there: in the
    checkout, that is beside the sources every other test process imports.
    """
    out = tmp_path_factory.mktemp("wheels")
    sources = tmp_path_factory.mktemp("sources")
    skip = shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "runs")
    for folder in DISTRIBUTIONS.values():
        shutil.copytree(ROOT / folder, sources / folder, symlinks=True, ignore=skip)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-index", "-w", str(out), *(str(sources / folder) for folder in DISTRIBUTIONS.values())],
        check=True, timeout=300, env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1"),
    )
    built = {w.name.split("-")[0].replace("_", "-"): w for w in out.glob("*.whl")}
    assert set(built) == set(DISTRIBUTIONS)
    return built


@pytest.fixture(scope="module")
def third_party(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test venv's site-packages without any mas distribution: the dependencies a fresh
    ``pip install`` would fetch, so no test downloads them."""
    farm = tmp_path_factory.mktemp("site")
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        name = entry.name.lower()
        if name.startswith(("mas_", "mas-", "__editable__")) or name.endswith(".pth"):
            continue
        (farm / entry.name).symlink_to(entry)
    return farm


def fresh_venv(root: Path, third_party: Path, *wheels: Path) -> Path:
    """A new venv with only ``wheels`` installed (and the third-party packages); its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    Path(site, "third_party.pth").write_text(f"{third_party}\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
         "--no-deps", "--no-index", *map(str, wheels)],
        check=True, timeout=300, env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1"),
    )
    return python


def run_in(python: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``python ARGS`` in a clean environment (no PYTHONPATH, no MAS_CONFIG)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MAS_CONFIG")}
    return subprocess.run(
        [str(python), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(DISTRIBUTIONS))
def test_each_distribution_installs_alone_and_pip_check_names_what_is_missing(
    name: str, wheels: dict[str, Path], third_party: Path, tmp_path: Path
) -> None:
    python = fresh_venv(tmp_path / "venv", third_party, wheels[name])
    checked = run_in(python, "-m", "pip", "check", cwd=tmp_path)
    missing = {line.split(" requires ")[1].split(",")[0]
               for line in checked.stdout.splitlines() if line.startswith(f"{name} ")}
    expected = {
        "mas-runtime": set(),
        "mas-library-standard": {"mas-runtime"},
        "mas-library-eval": {"mas-runtime"},
        "mas-library-lab": {"mas-runtime", "mas-library-eval"},
    }
    assert missing == expected[name], checked.stdout


@pytest.mark.slow
def test_the_kernel_alone_says_to_install_the_libraries(
    wheels: dict[str, Path], third_party: Path, tmp_path: Path
) -> None:
    python = fresh_venv(tmp_path / "venv", third_party, wheels["mas-runtime"])
    listed = run_in(python, "-m", "mas.runtime", "plugins", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert [p["name"] for p in json.loads(listed.stdout)["plugins"]] == ["builtin"]

    agent = tmp_path / "agent.yaml"
    agent.write_text((ROOT / "library-standard/examples/agent/agent.yaml").read_text())
    checked = run_in(python, "-m", "mas.runtime", "validate", str(agent), cwd=tmp_path)
    assert checked.returncode == 2
    assert "install mas-library-standard (from a mas-lab checkout: pip install -r requirements.txt)" in checked.stderr
    assert "Traceback" not in checked.stderr

    lab = run_in(python, "-m", "mas.runtime", "lab", "run", "x.yaml", cwd=tmp_path)
    assert lab.returncode == 2
    assert lab.stderr.startswith("error: mas-ctl lab comes with mas-library-lab")


@pytest.mark.slow
def test_a_library_without_the_kernel_names_the_kernel(
    wheels: dict[str, Path], third_party: Path, tmp_path: Path
) -> None:
    python = fresh_venv(tmp_path / "venv", third_party, wheels["mas-library-standard"])
    done = run_in(python, "-c", "import mas.library.standard.plugin", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "ModuleNotFoundError: mas-library-standard needs mas-runtime (the mas-lab kernel), "
        "which is not installed; from a mas-lab checkout: pip install -r requirements.txt"
    )


@pytest.mark.slow
def test_the_lab_without_the_jury_names_mas_library_eval(
    wheels: dict[str, Path], third_party: Path, tmp_path: Path
) -> None:
    python = fresh_venv(tmp_path / "venv", third_party, wheels["mas-runtime"], wheels["mas-library-lab"])
    listed = run_in(python, "-m", "mas.runtime", "plugins", cwd=tmp_path)
    assert listed.returncode == 1
    [failure] = json.loads(listed.stdout)["failed"]
    assert failure["distribution"] == "mas-library-lab"
    assert failure["error"].endswith(
        "ModuleNotFoundError: mas-library-lab needs mas-library-eval (the MCE jury its "
        "eval_mce step runs), which is not installed; from a mas-lab checkout: "
        "pip install -r requirements.txt"
    )
    assert "Traceback" not in listed.stderr


def test_root_pip_install_resolves_the_four_from_their_folders(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--no-index",
         "--no-build-isolation", "--report", str(report), str(ROOT)],
        capture_output=True, text=True, timeout=300,
        env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1"),
    )
    assert done.returncode == 0, done.stderr
    installs = {
        item["metadata"]["name"]: item["download_info"]["url"]
        for item in json.loads(report.read_text())["install"]
    }
    assert installs == {
        "mas-lab": ROOT.as_uri(),
        **{name: (ROOT / folder).as_uri() for name, folder in DISTRIBUTIONS.items()},
    }
