"""Security (no key leaks, no prompt text in inspection, no YAML object tags) and load.

The provider here is a real OpenAI-compatible HTTP server on 127.0.0.1 (the helper of
tests/engine/conftest.py, reused); the key lives only in the environment.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mas.runtime import Runtime
from mas.runtime.session import open_session, record_events, write_transcript
from mas.runtime.spec.loader import load_manifest_set

ENGINE_CONFTEST = Path(__file__).resolve().parents[1] / "engine" / "conftest.py"
KEY = "sk-mas-lab-reliability-SECRET-4f1c9e"
MARKER = "zebra-violet-quasar"


def _serve() -> Any:
    spec = importlib.util.spec_from_file_location("_mas_engine_fake_server", ENGINE_CONFTEST)
    assert spec is not None and spec.loader is not None
    module = sys.modules.get(spec.name) or importlib.util.module_from_spec(spec)
    if spec.name not in sys.modules:
        sys.modules[spec.name] = module  # dataclasses look their module up here
        spec.loader.exec_module(module)
    return module.serve()


def test_the_api_key_never_reaches_logs_events_run_folder_or_output(
    tmp_path: Path, write: Callable[[str, str], Path], mas_ctl: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("MAS_RELIABILITY_KEY", KEY)
    caplog.set_level("DEBUG")
    with _serve() as server:
        server.fail(500).fail(401, message=f"bad key {KEY}")  # a retry, then a refusal
        agent = write("agent.yaml", """
            apiVersion: mas/v1
            kind: Agent
            metadata: {name: guarded}
            spec:
              models: [{id: main, model: openai/gpt-4o-mini, context_window: 4000}]
            """)
        infra = write("infra.yaml", f"""
            apiVersion: mas/v1
            kind: Infra
            metadata: {{name: local}}
            spec:
              generation: {{api_base: "{server.base_url}", api_key_env: MAS_RELIABILITY_KEY,
                           num_retries: 1, timeout: 5}}
            """)
        turns = tmp_path / "turns.jsonl"
        turns.write_text(json.dumps(f"first {MARKER}") + "\n" + json.dumps("second") + "\n")
        failed = mas_ctl("run", agent, "--infra", infra, "--input", turns, "--out",
                         tmp_path / "run1")
        done = mas_ctl("run", agent, "--infra", infra, "--input", turns, "--out",
                       tmp_path / "run2")
        view = mas_ctl("inspect", tmp_path / "run2")
        sent = [h.get("authorization", "") for h in server.headers]
    assert failed.code != 0 and done.code == 0, done.err
    assert any(KEY in header for header in sent)  # the key really was used
    texts = [failed.out, failed.err, done.out, done.err, view.out, view.err, caplog.text]
    for path in tmp_path.rglob("*"):
        if path.is_file() and path.suffix != ".yaml":
            texts.append(path.read_text(errors="replace"))
    assert len(texts) > 8
    assert not [t for t in texts if KEY in t]
    assert MARKER not in view.out  # inspect_context: numbers and metadata only
    assert json.loads(view.out)["turns"] == 2


@pytest.mark.parametrize("tag", [
    "!!python/object/apply:os.system ['touch {flag}']",
    "!!python/object/new:os.system ['touch {flag}']",
    "!!python/name:os.system",
    "!!python/module:os",
])
def test_yaml_tags_that_build_python_objects_are_refused(
    tag: str, tmp_path: Path, write: Callable[[str, str], Path], mas_ctl: Callable[..., Any]
) -> None:
    flag = tmp_path / "flag"
    path = write("tagged.yaml", "apiVersion: mas/v1\nkind: Agent\nmetadata: {name: a}\n"
                 f"spec:\n  instructions: {tag.format(flag=flag)}\n")
    result = mas_ctl("validate", path)
    assert result.code == 2 and "Traceback" not in result.err
    assert result.err.startswith(f"{path}:")
    assert not flag.exists()


AGENT = """
apiVersion: mas/v1
kind: Agent
metadata: {name: loaded}
spec:
  models: [{id: main, model: offline/default, context_window: 1500, max_tokens: 100}]
  context_manager: {type: summarising, params: {keep_turns: 1}}
"""


def test_32_concurrent_offline_sessions_write_whole_event_lines(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(textwrap.dedent(AGENT))
    manifests = load_manifest_set([path])
    runtime = Runtime.create()  # one runtime shared by every session, as the lab does
    turns = [f"Turn {i}: my locker is L-{i}. " + "filler words " * 60 for i in range(4)]
    errors: list[BaseException] = []
    start = threading.Barrier(32)

    def play(n: int) -> None:
        try:
            folder = tmp_path / f"run{n}"
            session = open_session(runtime, manifests.agents[0], manifests,
                                   session_id=f"s{n:02d}", state_path=folder / "session.json")
            close = record_events(runtime, folder, lambda: session.session_id)
            start.wait(timeout=60)
            for text in turns:
                session.send(f"[{n}] {text}")
            write_transcript(folder, session)
            close()
        except BaseException as exc:  # reported below with the session number
            errors.append(exc)

    threads = [threading.Thread(target=play, args=(n,)) for n in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not errors, errors[:3]
    for n in range(32):
        folder = tmp_path / f"run{n}"
        raw = (folder / "events.jsonl").read_bytes()
        assert raw.endswith(b"\n")
        events = [json.loads(line) for line in raw.decode().splitlines()]
        assert {e["session_id"] for e in events} == {f"s{n:02d}"}
        assert [e["turn"] for e in events if e["event"] == "session.turn"] == [1, 2, 3, 4]
        transcript = json.loads((folder / "transcript.json").read_text())
        users = [m["content"] for m in transcript["messages"] if m["role"] == "user"]
        assert users == [f"[{n}] {t}" for t in turns]
