"""Issue 13 item 1: names that become paths are validated, and nothing is written or removed
outside its root (the lab's --runs-dir, a session's run folder)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mas.runtime.paths import UnsafePathError, contained, folder_name_problem, remove_tree


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize(("field", "kwargs", "location"), [
    ("experiment.name", {"name": "../../escaped"}, "experiment.name"),
    ("flavour name", {"flavour": "../../../escaped"}, "experiment.flavours[0].name"),
    ("absolute flavour", {"flavour": "/tmp/escaped"}, "experiment.flavours[0].name"),
    ("agent name", {"agent": "../../x"}, "metadata.name"),
])
def test_item01_names_that_become_paths_are_refused(
    field: str, kwargs: dict[str, str], location: str, tmp_path: Path,
    make_lab: Callable[..., Path], mas_ctl: Callable[..., Any],
) -> None:
    experiment = make_lab(tmp_path / "exp", **kwargs)
    before = _files(tmp_path)
    result = mas_ctl("lab", "run", experiment, "--runs-dir", tmp_path / "deep" / "runs")
    assert result.code == 2, (field, result.err)
    assert "Traceback" not in result.err
    lines = [line for line in result.err.splitlines() if location in line]
    assert lines and "folder name" in lines[0], result.err
    assert _files(tmp_path) == before  # nothing written anywhere, inside or out


def test_item01_overwrite_never_removes_outside_the_run_folder(
    tmp_path: Path, make_lab: Callable[..., Path], mas_ctl: Callable[..., Any],
) -> None:
    experiment = make_lab(tmp_path / "exp", items=1)
    runs = tmp_path / "runs"
    assert mas_ctl("lab", "run", experiment, "--runs-dir", runs).code == 0
    victim = tmp_path / "precious"
    (victim / "run-0").mkdir(parents=True)
    (victim / "run-0" / "keep.txt").write_text("mine")
    [item] = list(runs.glob("*/*/sessions/plain/i0"))
    for path in sorted(item.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    item.rmdir()
    item.symlink_to(victim, target_is_directory=True)  # sessions/plain/i0 -> outside
    result = mas_ctl("lab", "run", experiment, "--runs-dir", runs, "--overwrite")
    assert result.code != 0 and "Traceback" not in result.err
    assert "outside" in result.err
    assert (victim / "run-0" / "keep.txt").read_text() == "mine"


def test_item01_remove_tree_refuses_a_folder_outside_its_root(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f").write_text("x")
    root = tmp_path / "root"
    root.mkdir()
    with pytest.raises(UnsafePathError, match="outside"):
        remove_tree(root, root / ".." / "outside")
    (root / "link").symlink_to(outside, target_is_directory=True)
    remove_tree(root, root / "link")  # the link goes, its target stays
    assert not (root / "link").exists() and (outside / "f").is_file()


segment = st.sampled_from(["a", "b", "..", ".", "c-1"])


@given(st.lists(segment, min_size=1, max_size=8))
def test_item01_contained_agrees_with_the_normalised_path(parts: list[str]) -> None:
    root = Path("/srv/mas-root-that-does-not-exist")
    candidate = root.joinpath(*parts)
    inside = not os.path.relpath(os.path.normpath(candidate), root).startswith("..")
    if inside:
        assert contained(root, candidate) == Path(os.path.normpath(candidate))
    else:
        with pytest.raises(UnsafePathError):
            contained(root, candidate)


@given(st.text(min_size=1, max_size=20))
def test_item01_a_valid_folder_name_is_one_plain_component(name: str) -> None:
    if not folder_name_problem(name):
        assert Path(name).name == name and name not in (".", "..")
        assert "/" not in name and not name.startswith(".")
