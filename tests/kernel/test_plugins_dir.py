"""One-file local plugins from ``--plugins-dir`` / ``MAS_PLUGINS_DIR`` (issue 25, item 11)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mas.runtime import make_plugin_manager
from mas.runtime.errors import MasError

MAS_CTL = str(Path(sys.executable).with_name("mas-ctl"))

GOOD = '''\
"""A summarizer tried without packaging it."""
from mas.runtime import hookimpl


class Headline:
    """Keep the first words of the folded turns."""

    def __init__(self, params, ctx):
        self.params = params


@hookimpl
def mas_register_summarizers(registry):
    registry.register("local_headline", Headline)
'''
BROKEN = 'x = 1\n\nraise RuntimeError("bug in my file")\n'


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "good.py").write_text(GOOD)
    (plugins / "broken.py").write_text(BROKEN)
    (plugins / "_helper.py").write_text('raise RuntimeError("never imported")\n')
    (plugins / "notes.txt").write_text("not a plugin\n")
    return plugins


def mas_ctl(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run mas-ctl in ``cwd`` (no config.yaml there) with ``env`` added."""
    full = dict(os.environ, **env)
    for name in ("MAS_CONFIG", "MAS_PLUGINS_DIR", "MAS_DISABLE_PLUGINS"):
        if name not in env:
            full.pop(name, None)
    return subprocess.run(
        [MAS_CTL, *args], env=full, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def _check_listing(done: subprocess.CompletedProcess[str], folder: Path) -> None:
    assert "Traceback" not in done.stderr
    assert done.returncode == 1, "a faulted plugin makes `plugins` exit 1"
    report = json.loads(done.stdout)
    plugins = {p["name"]: p for p in report["plugins"]}
    assert "standard" in plugins, "installed plugins load as before"
    assert plugins["good"]["distribution"] == str(folder / "good.py")
    assert plugins["good"]["types"] == {"summarizer": ["local_headline"]}
    assert "_helper" not in plugins
    [failure] = report["failed"]
    assert (failure["entry_point"], failure["group"], failure["stage"]) == (
        "broken", "plugins-dir", "import")
    assert (failure["file"], failure["line"]) == (str(folder / "broken.py"), 3)
    assert failure["distribution"] == str(folder / "broken.py")
    assert done.stderr.count("MAS_DISABLE_PLUGINS=broken skips it") == 1
    assert "RuntimeError: bug in my file" in done.stderr


def test_the_option_loads_each_file_and_contains_a_broken_one(
    tmp_path: Path, folder: Path
) -> None:
    _check_listing(mas_ctl(tmp_path, "--plugins-dir", str(folder), "plugins"), folder)
    _check_listing(mas_ctl(tmp_path, f"--plugins-dir={folder}", "plugins"), folder)


def test_the_variable_does_the_same_and_a_file_can_be_disabled(
    tmp_path: Path, folder: Path
) -> None:
    _check_listing(mas_ctl(tmp_path, "plugins", MAS_PLUGINS_DIR=str(folder)), folder)
    skipped = mas_ctl(tmp_path, "plugins", "local_headline", MAS_PLUGINS_DIR=str(folder),
                      MAS_DISABLE_PLUGINS="broken")
    assert skipped.returncode == 0, skipped.stderr
    assert skipped.stderr == ""
    [described] = json.loads(skipped.stdout)
    assert (described["plugin"], described["description"]) == (
        "good", "Keep the first words of the folded turns.")


def test_a_folder_that_is_not_one_is_a_one_line_error(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    done = mas_ctl(tmp_path, "--plugins-dir", str(missing), "plugins")
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: --plugins-dir: {str(missing)!r} is not a directory"
    done = mas_ctl(tmp_path, "plugins", MAS_PLUGINS_DIR=str(missing))
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: MAS_PLUGINS_DIR: {str(missing)!r} is not a directory"


def test_a_file_named_like_an_installed_plugin_is_not_loaded(tmp_path: Path) -> None:
    (tmp_path / "standard.py").write_text(GOOD)
    pm = make_plugin_manager(plugins_dir=tmp_path)
    assert pm.info("standard").distribution == "mas-library-standard"
    assert pm.failures == []
    assert pm.has_plugin("standard")


def test_in_code_a_missing_variable_folder_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAS_PLUGINS_DIR", "/definitely/not/here")
    with pytest.raises(MasError, match="MAS_PLUGINS_DIR: '/definitely/not/here'"):
        make_plugin_manager()
