"""The pipeline DAG: order, cycles, unknown steps, failures, skipping; a custom step plugin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from mas.library.lab.pipeline import (
    BLOCKED,
    FAILED,
    OK,
    SKIPPED,
    Pipeline,
    build_pipeline,
    find_cycle,
    run_pipeline,
)
from mas.runtime import Runtime, hookimpl
from mas.runtime.errors import Problem
from mas.runtime.protocols import Step, StepResult
from mas.runtime.spec.experiment import StepSpec


class NoteParams(BaseModel):
    """Params of the test step."""

    model_config = ConfigDict(extra="forbid")

    text: str = "hello"
    fail: bool = False


class NoteStep:
    """Writes ``notes/<name>.txt``; fails on request."""

    def __init__(self, params: NoteParams, spec: StepSpec) -> None:
        self.params = params
        self.name = spec.step_name

    def outputs(self, ctx: Any) -> list[str]:
        return [f"notes/{self.name}.txt"]

    def run(self, ctx: Any) -> StepResult:
        if self.params.fail:
            raise RuntimeError("asked to fail")
        path = ctx["root"] / "notes" / f"{self.name}.txt"
        path.parent.mkdir(exist_ok=True)
        path.write_text(self.params.text)
        ctx["ran"].append(self.name)
        return StepResult([f"notes/{self.name}.txt"], {"chars": len(self.params.text)}, "noted")


class NotePlugin:
    """A third-party step plugin, registered the way an installed one is."""

    @hookimpl
    def mas_register_lab_steps(self, registry: Any) -> None:
        registry.register("note", NoteStep, params=NoteParams, description="write a note")


@pytest.fixture
def note_runtime(register_plugin: Any) -> Runtime:
    return register_plugin(NotePlugin(), "notes")


def _plan(runtime: Runtime, post: list[dict[str, Any]]) -> tuple[Pipeline, list[Problem]]:
    problems: list[Problem] = []
    pipeline = build_pipeline(runtime, [StepSpec.model_validate(s) for s in post], "exp.yaml", problems)
    return pipeline, problems


def test_the_custom_step_is_registered_and_follows_the_protocol(note_runtime: Runtime) -> None:
    entry = note_runtime.registries.lab_step.get("note")
    assert entry.provider.name == "notes"
    step = entry.factory(NoteParams(), StepSpec(type="note"))
    assert isinstance(step, Step)


def test_stock_template_and_post_steps_are_ordered(note_runtime: Runtime) -> None:
    pipeline, problems = _plan(note_runtime, [
        {"type": "note", "name": "late", "depends_on": ["early"]},
        {"type": "note", "name": "early"},
    ])
    assert problems == []
    names = pipeline.names()
    assert names[0] == "run_sessions"
    assert names.index("early") < names.index("late") < names.index("aggregate") < names.index("report")
    # post steps feed aggregate, and every step comes after the sessions
    aggregate = next(s for s in pipeline.steps if s.name == "aggregate")
    assert {"late", "early", "eval_mce"} <= set(aggregate.spec.depends_on)
    assert all("run_sessions" in s.spec.depends_on for s in pipeline.steps[1:])


def test_a_declared_eval_step_replaces_the_stock_one(runtime: Runtime) -> None:
    pipeline, problems = _plan(runtime, [{"type": "eval_mce", "name": "strict",
                                          "config": {"model": "offline/default"}}])
    assert problems == []
    assert "eval_mce" not in pipeline.names() and "strict" in pipeline.names()


def test_a_cycle_is_rejected_with_the_cycle_named(note_runtime: Runtime) -> None:
    _, problems = _plan(note_runtime, [
        {"type": "note", "name": "a", "depends_on": ["b"]},
        {"type": "note", "name": "b", "depends_on": ["c"]},
        {"type": "note", "name": "c", "depends_on": ["a"]},
    ])
    assert [p.format() for p in problems] == [
        "exp.yaml: experiment.application.post: the steps form a cycle: a -> b -> c -> a"
    ]


def test_a_cycle_through_a_stock_step_is_named(note_runtime: Runtime) -> None:
    _, problems = _plan(note_runtime, [{"type": "note", "name": "n", "depends_on": ["report"]}])
    assert "cycle: " in problems[0].message
    cycle = problems[0].message.split("cycle: ")[1].split(" -> ")
    assert cycle[0] == cycle[-1] and {"n", "aggregate", "report"} <= set(cycle)


def test_unknown_step_references_types_and_configs_are_located(note_runtime: Runtime) -> None:
    _, problems = _plan(note_runtime, [
        {"type": "note", "name": "a", "depends_on": ["nowhere"]},
        {"type": "nope"},
        {"type": "note", "name": "c", "config": {"txt": "typo"}},
    ])
    lines = [p.format() for p in problems]
    assert any(line.startswith("exp.yaml: experiment.application.post[0].depends_on[0]: step 'a' "
                               "depends on an unknown step") and "(got 'nowhere')" in line for line in lines)
    assert any("post[1].type: unknown lab_step type 'nope'" in line for line in lines)
    assert any(line.startswith("exp.yaml: experiment.application.post[2].config.txt: unknown field")
               for line in lines)


def test_find_cycle_on_acyclic_and_self_loops() -> None:
    assert find_cycle({"a": ["b"], "b": [], "c": ["a", "b"]}) is None
    assert find_cycle({"a": ["a"]}) == ["a", "a"]


def _notes_only(runtime: Runtime, post: list[dict[str, Any]]) -> Pipeline:
    pipeline, problems = _plan(runtime, post)
    assert problems == []
    steps = [s for s in pipeline.steps if s.spec.type == "note"]
    for step in steps:
        step.spec.depends_on = [d for d in step.spec.depends_on if d in {s.name for s in steps}]
    return Pipeline(steps)


def _run(pipeline: Pipeline, root: Path, *, overwrite: bool = False,
         previous: dict[str, Any] | None = None) -> tuple[dict[str, Any], list[str]]:
    ran: list[str] = []
    records = run_pipeline(pipeline, lambda step, records: {"root": root, "ran": ran},
                           overwrite=overwrite, previous=previous,
                           exists=lambda rel: (root / rel).exists())
    return records, ran


def test_a_failed_step_skips_its_dependents_but_not_independent_steps(note_runtime: Runtime, tmp_path: Path) -> None:
    pipeline = _notes_only(note_runtime, [
        {"type": "note", "name": "broken", "config": {"fail": True}},
        {"type": "note", "name": "after", "depends_on": ["broken"]},
        {"type": "note", "name": "later", "depends_on": ["after"]},
        {"type": "note", "name": "alone"},
    ])
    records, ran = _run(pipeline, tmp_path)
    assert records["broken"].status == FAILED and records["broken"].error == "RuntimeError: asked to fail"
    assert records["after"].status == BLOCKED and records["later"].status == BLOCKED
    assert "broken" in records["after"].message
    assert records["alone"].status == OK and ran == ["alone"]


def test_steps_with_existing_outputs_are_skipped_unless_overwrite(note_runtime: Runtime, tmp_path: Path) -> None:
    pipeline = _notes_only(note_runtime, [{"type": "note", "name": "a", "config": {"text": "abc"}}])
    first, ran = _run(pipeline, tmp_path)
    assert first["a"].status == OK and first["a"].metadata == {"chars": 3} and ran == ["a"]
    second, ran = _run(pipeline, tmp_path, previous={"a": first["a"].to_json()})
    assert second["a"].status == SKIPPED and ran == []
    assert second["a"].metadata == {"chars": 3}  # kept from the earlier pass
    third, ran = _run(pipeline, tmp_path, overwrite=True)
    assert third["a"].status == OK and ran == ["a"]
