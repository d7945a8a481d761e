"""Issue 12, item 11: the undecided spec items are decided in docs/spec-decisions.md, and
what that page shows works as written."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "spec-decisions.md"
HEAD = "apiVersion: mas/v1\nkind: Agent\nmetadata: {name: a}\nspec:\n"


def test_undecided_spec_items_are_recorded_with_their_reason() -> None:
    text = PAGE.read_text()
    for heading in ("reserveRatio", "lab-config.yaml"):
        assert re.search(rf"^## .*{re.escape(heading)}", text, re.MULTILINE), heading
    linked_from = [ROOT / "docs" / "README.md", ROOT / "docs" / "context.md"]
    assert all("spec-decisions.md" in p.read_text() for p in linked_from)


def test_undecided_spec_items_reserve_ratio_snippet_validates(
    write: Callable[[str, str], Path], mas_ctl: Callable[..., Any]
) -> None:
    snippet = re.search(r"```yaml\n(context_manager:.*?)```", PAGE.read_text(), re.DOTALL)
    assert snippet is not None
    body = "".join(f"  {line}\n" for line in snippet.group(1).splitlines())
    agent = write("a.yaml", HEAD + body)
    assert yaml.safe_load(agent.read_text())["spec"]["context_manager"]["params"] == {
        "trimmer": {"safety_margin_ratio": 0.05}}
    assert mas_ctl("validate", agent).code == 0
    assert '"margin": ' in mas_ctl("compile", "--json", agent).out
    # reserveRatio is not a second knob: it is refused in one line, naming the field.
    spelled = write("b.yaml", HEAD + "  context_manager: {type: summarising, params: "
                    "{reserveRatio: 0.05}}\n")
    refused = mas_ctl("validate", spelled)
    assert refused.code == 2 and "params.reserveRatio: unknown field" in refused.err


def test_undecided_spec_items_the_experiment_file_serves_interactive_use(
    mas_ctl: Callable[..., Any]
) -> None:
    experiment = ROOT / "library-lab/examples/context-ablation/experiment.yaml"
    assert str(experiment.relative_to(ROOT)) in PAGE.read_text()
    compiled = mas_ctl("compile", "--json", experiment)
    assert compiled.code == 0, compiled.err
    assert '"source": "experiment.models.main"' in compiled.out
