"""Issue 11: ``spec.estimation.counter: litellm`` counts with litellm.token_counter."""

from __future__ import annotations

import textwrap
from pathlib import Path

from mas.runtime import Runtime
from mas.runtime.engine._litellm import load_litellm
from mas.runtime.engine.counter import LiteLLMCounter
from mas.runtime.session import open_session
from mas.runtime.spec.loader import load_manifest_set

AGENT = """
apiVersion: mas/v1
kind: Agent
metadata: {{name: counted}}
spec:
  models: [{{id: main, model: offline/default, context_window: 4000, max_tokens: 256}}]
  estimation: {{counter: {counter}}}
"""


def session(tmp_path: Path, counter: str, state: Path | None = None):
    path = tmp_path / "agent.yaml"
    path.write_text(textwrap.dedent(AGENT.format(counter=counter)))
    manifests = load_manifest_set([path])
    return open_session(Runtime.create(), manifests.agents[0], manifests, state_path=state)


def test_the_litellm_counter_counts_every_committed_message_with_token_counter(
    tmp_path: Path,
) -> None:
    s = session(tmp_path, "litellm", state=tmp_path / "run" / "session.json")
    assert isinstance(s.history.estimator, LiteLLMCounter)
    s.send("My order id is ORD-7781 and I paid 142.50 EUR.")
    s.send("What was my order id?")
    litellm = load_litellm()
    expected = [litellm.token_counter(model="offline/default", messages=[
        {k: v for k, v in m.items() if k in ("role", "content")}]) for m in s.history.messages]
    assert [s.history.tokens_of(i) for i in range(len(s.history))] == expected
    resumed = session(tmp_path, "litellm", state=tmp_path / "run" / "session.json")
    assert isinstance(resumed.history.estimator, LiteLLMCounter), "a resume counts the same way"
    assert resumed.history.total_tokens == s.history.total_tokens


def test_chars_stays_the_default(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(AGENT.replace("  estimation: {{counter: {counter}}}\n", "").format())
    manifests = load_manifest_set([path])
    s = open_session(Runtime.create(), manifests.agents[0], manifests)
    assert not isinstance(s.history.estimator, LiteLLMCounter)


def test_an_unknown_counter_is_one_line_naming_the_field(tmp_path: Path, mas_ctl) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(textwrap.dedent(AGENT.format(counter="tiktoken")))
    done = mas_ctl("validate", path)
    assert done.code == 2
    assert "spec.estimation.counter" in done.err and "tiktoken" in done.err
    assert len(done.err.strip().splitlines()) == 1
