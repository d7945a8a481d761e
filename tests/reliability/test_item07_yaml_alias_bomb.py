"""Issue 13 item 7: a few hundred bytes of YAML aliases must not exhaust memory.

The bomb is nine levels of nine aliases (9**9 strings once expanded). It goes through
``mas-ctl validate`` in a child process with a 1.5 GiB address-space limit and a deadline,
so that the unfixed code fails the test instead of taking the machine down.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mas.runtime.errors import ManifestError, Problem
from mas.runtime.spec.yaml_io import MAX_EXPANDED_SIZE, read_yaml_documents

LIMIT_BYTES = 3 << 29


def _bomb(levels: int = 9) -> str:
    lines = ["apiVersion: mas/v1", "kind: Agent", "metadata: {name: bomb}", "spec:",
             '  l0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"  l{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_BYTES, LIMIT_BYTES))


def _child(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, preexec_fn=_limited)


def test_item07_alias_bomb_is_refused_in_one_line_quickly(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(_bomb())
    assert len(bomb.read_bytes()) < 600
    done = _child("""
        import sys
        from mas.runtime.cli import main
        sys.exit(main(["validate", "bomb.yaml"]))
        """, tmp_path)
    assert done.returncode == 2, done.stderr[-500:]
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        f"bomb.yaml: document too large once its aliases are expanded (more than "
        f"{MAX_EXPANDED_SIZE:,} nodes and characters); write the repeated parts out or use "
        "fewer aliases"]


def test_item07_a_problem_never_reprs_an_unbounded_value(tmp_path: Path) -> None:
    done = _child("""
        from mas.runtime.errors import Problem
        value = ["x" * 10_000]
        for _ in range(12):
            value = [value] * 10   # 10**12 leaves if written out in full
        print(Problem("f.yaml", "spec", "bad", value, True).format())
        """, tmp_path)
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.startswith("f.yaml: spec: bad (got [[[") and len(done.stdout) < 200


def test_item07_recursive_alias_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="recursive alias"):
        read_yaml_documents(tmp_path / "r.yaml", "a: &a [1, *a]\n")


@given(st.integers(1, 60), st.integers(1, 60))
def test_item07_documents_without_aliases_or_with_few_always_load(width: int, depth: int) -> None:
    text = "root: &r [" + ", ".join(["word"] * width) + "]\n"
    text += "".join(f"k{i}: *r\n" for i in range(depth))
    documents = read_yaml_documents("ok.yaml", text)
    assert documents[0]["k0"] == ["word"] * width


def test_item07_short_values_keep_their_full_repr() -> None:
    assert Problem("f", "x", "bad", {"a": [1, 2]}, True).format() == "f: x: bad (got {'a': [1, 2]})"
