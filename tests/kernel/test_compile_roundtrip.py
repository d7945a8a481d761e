"""Issue 12, item 6: ``mas-ctl compile`` output validates and compiles to the same result,
for every example manifest in the repo (agents alone, MAS files and experiments, each
recompiled in the same context)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(
    path for folder in ROOT.glob("library-*/examples") for path in folder.rglob("*.yaml")
)


def _kinds(path: Path) -> set[str]:
    kinds = set()
    for doc in yaml.safe_load_all(path.read_text()):
        if isinstance(doc, dict):
            kinds.add("experiment" if "experiment" in doc and "kind" not in doc else doc.get("kind"))
    return kinds


COMPILABLE = [p for p in EXAMPLES if _kinds(p) & {"Agent", "MAS", "experiment"}]


def _without_file(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # Which file was read differs by construction; and compile writes the binding in force
    # explicitly, so a default or working_memory binding is spec.context_manager when read
    # back (docs/manifests/agent.md, "compile output").
    for doc in documents:
        doc["status"].pop("file")
        doc["status"]["context_manager"].pop("source")
    return documents


def _recompile_input(source: Path, compiled: Path, tmp_path: Path) -> Path:
    """The compiled agents in ``source``'s context: an experiment keeps its fields (but its
    flavours) and non-agent applications (infra), with the compiled file as its agent."""
    if "experiment" not in _kinds(source):
        return compiled
    data = yaml.safe_load(source.read_text())
    apps = []
    for app in data["experiment"]["applications"]:
        path = (source.parent / app["manifest"]).resolve()
        if not _kinds(path) & {"Agent", "MAS"}:
            apps.append({"manifest": str(path)})
    data["experiment"]["applications"] = [{"manifest": str(compiled)}, *apps]
    body = data["experiment"]
    dataset = body.get("dataset")
    if isinstance(dataset, dict):  # {path, format, ...}: the path moves, the rest stays
        dataset["path"] = str((source.parent / dataset["path"]).resolve())
    elif dataset:
        body["dataset"] = str((source.parent / dataset).resolve())
    # compile reads the applications as written, without flavour patches; its output has
    # every binding explicit, which an overlay replacing the strategy would merge into.
    body.pop("flavours", None)
    out = tmp_path / "experiment.yaml"
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    return out


def test_there_are_examples_of_every_compilable_kind() -> None:
    kinds = set().union(*(_kinds(p) for p in COMPILABLE))
    assert {"Agent", "experiment"} <= kinds and len(COMPILABLE) >= 5


@pytest.mark.parametrize("example", COMPILABLE, ids=[str(p.relative_to(ROOT)) for p in COMPILABLE])
def test_compile_output_validates_and_compiles_to_the_same_result(
    example: Path, tmp_path: Path, mas_ctl: Callable[..., Any]
) -> None:
    first = mas_ctl("compile", example)
    assert first.code == 0, first.err
    compiled = tmp_path / "compiled.yaml"
    compiled.write_text(first.out)
    documents = list(yaml.safe_load_all(first.out))
    assert documents and all(doc["kind"] == "Agent" for doc in documents)

    again_input = _recompile_input(example, compiled, tmp_path)
    checked = mas_ctl("validate", compiled)
    assert checked.code == 0, checked.err
    if again_input != compiled:
        in_context = mas_ctl("validate", again_input)
        assert in_context.code == 0, in_context.err
    second = mas_ctl("compile", again_input)
    assert second.code == 0, second.err
    assert _without_file(list(yaml.safe_load_all(second.out))) == _without_file(documents)


def test_compile_output_of_a_mas_compiles_to_the_same_result_under_that_mas(
    tmp_path: Path, mas_ctl: Callable[..., Any]
) -> None:
    # No example in the repo is a MAS, so one is written here: an agent on `any` takes
    # its model, window and reserve from the MAS row, and must again once recompiled there.
    (tmp_path / "agent.yaml").write_text(
        "apiVersion: mas/v1\nkind: Agent\nmetadata: {name: a}\n"
        "spec: {models: [{id: main, model: any}]}\n")
    mas = ("apiVersion: mas/v1\nkind: MAS\nmetadata: {name: team}\nspec:\n"
           "  models: [{id: main, model: gpt-4o-mini, context_window: 50000, max_tokens: 777}]\n"
           "  agents: [{name: a, manifest: %s}]\n")
    (tmp_path / "mas.yaml").write_text(mas % "agent.yaml")
    first = mas_ctl("compile", tmp_path / "mas.yaml")
    assert first.code == 0, first.err
    (tmp_path / "compiled.yaml").write_text(first.out)
    (tmp_path / "again.yaml").write_text(mas % "compiled.yaml")
    assert mas_ctl("validate", tmp_path / "again.yaml").code == 0
    second = mas_ctl("compile", tmp_path / "again.yaml")
    assert second.code == 0, second.err
    documents = list(yaml.safe_load_all(first.out))
    assert documents[0]["status"]["window"]["value"] == 50_000
    assert _without_file(list(yaml.safe_load_all(second.out))) == _without_file(documents)
