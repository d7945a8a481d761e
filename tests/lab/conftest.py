"""Fixtures of the lab tests: a tiny experiment (three flavours, two short scripted items)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from mas.runtime import Runtime

AGENT = """\
apiVersion: mas/v1
kind: Agent
metadata: {name: tiny}
spec:
  instructions: You are a careful assistant.
  models:
    - id: main
      model: any
      context_window: 8000
      max_tokens: 256
"""

OVERLAY = """\
apiVersion: mas/v1
kind: Overlay
metadata: {{name: {name}}}
spec:
  target: {{kind: Agent}}
  patch:
    context_manager: {binding}
"""

FILLER = ("For the record, the team went over the rollout plan and agreed to look again "
          "after the next sync without changing anything yet.")


def item(ident: str, code: str, turns: int = 10) -> dict[str, object]:
    """A scripted item: a fact planted first, a tool call, filler, the fact asked last."""
    script: list[object] = [f"Invoice {code} belongs to customer Marta Kowalski, amount 18,450 EUR."]
    script.append({"user": 'Pull the log.\nCALL fetch_log {"day": "2026-03-14"}',
                   "tool_results": {"fetch_log": "\n".join(f"svc-1 req {100000 + i} status 200"
                                                           for i in range(40))}})
    script.extend([FILLER] * (turns - 3))
    script.append(f"What amount and customer belong to invoice {code}?")
    return {"id": ident, "turns": script, "expected_facts": ["18,450 EUR", "Marta Kowalski"],
            "probes": [{"turn": turns - 1, "expected": ["18,450 EUR"], "kind": "planted"}]}


def write_experiment(root: Path, *, post: str = "", dataset: list[dict[str, object]] | None = None,
                     extra: str = "") -> Path:
    """Write the tiny experiment under ``root``; returns the experiment file."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "agent.yaml").write_text(AGENT)
    bindings = {
        "summarising": "{type: summarising, params: {summary_threshold: 400, keep_turns: 2}}",
        "sliding_window": "{type: sliding_window, params: {keep_turns: 2}}",
        "stack": "{type: stack}",
    }
    (root / "overlays").mkdir(exist_ok=True)
    for name, binding in bindings.items():
        (root / "overlays" / f"{name}.yaml").write_text(OVERLAY.format(name=name.replace("_", "-"),
                                                                       binding=binding))
    items = dataset if dataset is not None else [item("a-01", "INV-11111"), item("a-02", "INV-22222", 12)]
    (root / "dataset.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
    flavours = "".join(f"    - name: {name}\n      overlays: [overlays/{name}.yaml]\n" for name in bindings)
    text = (
        "experiment:\n  name: tiny\n  models: {main: offline/default, judge: offline/default}\n"
        "  applications:\n    - manifest: ./agent.yaml\n"
        f"  flavours:\n{flavours}  dataset: ./dataset.jsonl\n{extra}"
        + (f"  application:\n    post:\n{post}" if post else "")
    )
    path = root / "experiment.yaml"
    path.write_text(text)
    return path


@pytest.fixture(scope="session")
def runtime() -> Runtime:
    """One runtime with the installed plugins (standard, eval, lab)."""
    return Runtime.create()


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    """The tiny experiment file."""
    return write_experiment(tmp_path / "exp")


@pytest.fixture(scope="session")
def make_experiment() -> Callable[..., Path]:
    """:func:`write_experiment`, for tests that need a variant of the tiny experiment."""
    return write_experiment


@pytest.fixture
def make_item() -> Callable[..., dict[str, object]]:
    """:func:`item`, for tests that write their own dataset."""
    return item
