"""Issue 12, item 3: ``spec.models[]`` rows are merged by id only where spec 000 says so
(the agent inherits the slot's model), and every value names the manifest row it came from."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from mas.runtime.spec.model_ref import ModelRow, ModelScope

MAS = """
apiVersion: mas/v1
kind: MAS
metadata: {{name: team}}
spec:
  models:
    - {{id: main, model: {mas_model}, context_window: 50000, max_tokens: 777}}
  agents:
    - {{name: a, manifest: agent.yaml}}
"""

AGENT = """
apiVersion: mas/v1
kind: Agent
metadata: {{name: a}}
spec:
  models:
    - {{id: main, model: {agent_model}}}
"""


def _compile(write: Callable[[str, str], Path], mas_ctl: Callable[..., Any],
             mas_model: str, agent_model: str) -> dict[str, Any]:
    write("agent.yaml", AGENT.format(agent_model=agent_model))
    mas = write("mas.yaml", MAS.format(mas_model=mas_model))
    result = mas_ctl("compile", "--json", mas)
    assert result.code == 0, result.err
    (agent,) = json.loads(result.out)["agents"]
    return dict(agent)


def test_rows_inherited_across_models_are_not_merged(write, mas_ctl) -> None:
    agent = _compile(write, mas_ctl, mas_model="gpt-4o-mini", agent_model="gpt-4o")
    assert agent["turn_model"] == {"model": "gpt-4o", "source": "spec.models[id=main]"}
    # The MAS row describes gpt-4o-mini: its 50,000 and 777 are not gpt-4o's.
    assert agent["window"]["value"] == 128_000 and agent["window"]["source"] != \
        "mas.spec.models[id=main].context_window"
    assert agent["window"]["source"].startswith(("catalog", "litellm-map"))
    assert agent["reserve"] == {"value": 2000, "source": "fallback"}


def test_rows_inherited_when_the_agent_inherits_name_the_mas_row(write, mas_ctl) -> None:
    agent = _compile(write, mas_ctl, mas_model="gpt-4o-mini", agent_model="any")
    assert agent["turn_model"] == {"model": "gpt-4o-mini", "source": "mas.spec.models[id=main]"}
    assert agent["window"] == {"value": 50_000, "source": "mas.spec.models[id=main].context_window",
                               "warning": None}
    assert agent["reserve"] == {"value": 777, "source": "mas.spec.models[id=main].max_tokens"}


def test_rows_of_the_same_model_are_merged(write, mas_ctl) -> None:
    agent = _compile(write, mas_ctl, mas_model="gpt-4o", agent_model="gpt-4o")
    assert agent["window"]["source"] == "mas.spec.models[id=main].context_window"


MODELS = st.sampled_from([None, "any", "m1", "m2"])
VALUES = st.one_of(st.none(), st.integers(1, 10**6))


@given(agent_model=MODELS, agent_value=VALUES, mas_model=MODELS, mas_value=VALUES,
       has_agent=st.booleans())
def test_rows_merge_invariant(agent_model: str | None, agent_value: int | None,
                              mas_model: str | None, mas_value: int | None,
                              has_agent: bool) -> None:
    agent = [ModelRow("main", agent_model, context_window=agent_value)] if has_agent else []
    scope = ModelScope.build(agent, [ModelRow("main", mas_model, context_window=mas_value)])
    found = scope.row_value("main", "context_window")
    pinned = agent_model not in (None, "any") and has_agent
    if has_agent and agent_value is not None:
        assert found == (agent_value, "spec.models[id=main].context_window")
    elif mas_value is not None and (not pinned or agent_model == mas_model):
        assert found == (mas_value, "mas.spec.models[id=main].context_window")
    else:
        assert found is None
