"""Issue 13 item 3: a path that is not a manifest is rejected without echoing its content."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

SECRET_LINE = "root:x:0:0:the-private-line-of-a-system-file:/root:/bin/bash"


@pytest.mark.parametrize("content", [
    SECRET_LINE + "\n" + SECRET_LINE + "\n",          # a plain scalar document
    "- " + SECRET_LINE + "\n",                         # a list
    "kind: " + SECRET_LINE.replace(":", " ") + "\n",   # a mapping whose kind is prose
])
def test_item03_experiment_application_that_is_not_a_manifest_is_not_echoed(
    content: str, tmp_path: Path, mas_ctl: Callable[..., Any],
) -> None:
    private = tmp_path / "etc" / "passwd"
    private.parent.mkdir()
    private.write_text(content)
    (tmp_path / "work" / "exp").mkdir(parents=True)
    experiment = tmp_path / "work" / "exp" / "experiment.yaml"
    experiment.write_text("experiment:\n  name: peek\n"
                          "  applications: [{manifest: ../../etc/passwd}]\n"
                          "  flavours: [{name: plain}]\n  dataset: ./data.jsonl\n")
    for command in (("validate", experiment), ("lab", "run", experiment)):
        result = mas_ctl(*command)
        assert result.code == 2 and "Traceback" not in result.err
        assert "private-line" not in result.err + result.out, result.err
        assert "passwd" in result.err  # the file is named, its content is not


def test_item03_a_device_is_not_read(mas_ctl: Callable[..., Any]) -> None:
    result = mas_ctl("validate", "/dev/zero")  # would be read forever
    assert result.code == 2
    assert result.err.strip() == "/dev/zero: not a regular file (a manifest is a YAML file)"
