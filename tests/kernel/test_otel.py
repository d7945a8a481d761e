"""OpenTelemetry export: GenAI spans of a real session, in memory and over OTLP/HTTP.

The sessions run on the offline model through LiteLLM's real call path, with a window
small enough that the summarizer compacts once. The OTLP test runs ``mas-ctl run --otel``
against a receiver on 127.0.0.1 that decodes the protobuf export request itself.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mas.runtime import Runtime
from mas.runtime.errors import ModelCallError
from mas.runtime.fakeprovider import serve
from mas.runtime.otel import TraceSettingError, TraceSettings, settings_from, start_tracing
from mas.runtime.otel._setup import otlp_exporter
from mas.runtime.otel._spans import provider_name
from mas.runtime.session import AgentSession, open_session
from mas.runtime.spec.loader import load_manifest_set

AGENT = """
apiVersion: mas/v1
kind: Agent
metadata: {name: tracer}
spec:
  models: [{id: main, model: offline/default, context_window: 2500, max_tokens: 200}]
  context_manager: {type: summarising, params: {keep_turns: 2}}
"""
FACT = "My booking reference is BK-4471."
FILLER = "words about the weather and other small talk " * 25
TURNS = [FACT, *(f"Turn {i}. {FILLER}" for i in range(8)), "What is my booking reference?"]
MAS_CTL = str(Path(sys.executable).with_name("mas-ctl"))


def _session(tmp_path: Path, runtime: Runtime) -> AgentSession:
    path = tmp_path / "agent.yaml"
    path.write_text(textwrap.dedent(AGENT))
    manifests = load_manifest_set([path])
    return open_session(runtime, manifests.agents[0], manifests)


def _traced(tmp_path: Path, turns: list[str], *, capture: bool = False) -> tuple[AgentSession, list[ReadableSpan]]:
    runtime = Runtime.create()
    session = _session(tmp_path, runtime)
    memory = InMemorySpanExporter()
    tracing = start_tracing(
        runtime, TraceSettings(True, "test", capture_content=capture), agent_name="tracer",
        turn_messages=lambda _sid, count: session.transcript[-count:], exporter=memory,
    )
    for text in turns:
        session.send(text)
    assert tracing.close() == [f"otel: {len(memory.get_finished_spans())} span(s) exported to InMemorySpanExporter"]
    return session, list(memory.get_finished_spans())


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> tuple[AgentSession, list[ReadableSpan]]:
    """One traced session of ten turns with one compaction, and its spans."""
    return _traced(tmp_path_factory.mktemp("otel"), TURNS)


def _tree(spans: list[ReadableSpan]) -> dict[int | None, list[ReadableSpan]]:
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in spans:
        children.setdefault(span.parent.span_id if span.parent else None, []).append(span)
    return children


def test_one_invoke_agent_span_per_turn_with_its_calls(traced: tuple[AgentSession, list[ReadableSpan]]) -> None:
    session, spans = traced
    children = _tree(spans)
    turns = children[None]
    assert [s.name for s in turns] == ["invoke_agent tracer"] * len(TURNS) == ["invoke_agent tracer"] * session.turns
    for number, turn in enumerate(turns, 1):
        attrs = turn.attributes or {}
        assert attrs["gen_ai.operation.name"] == "invoke_agent" and attrs["gen_ai.agent.name"] == "tracer"
        assert attrs["gen_ai.conversation.id"] == session.session_id
        assert attrs["mas.turn.turn"] == number and attrs["mas.turn.llm_calls"] >= 1
        assert turn.start_time is not None and turn.end_time is not None
        for child in children.get(turn.context.span_id, []):
            assert child.start_time is not None and child.end_time is not None
            assert turn.start_time <= child.start_time <= child.end_time <= turn.end_time
    calls = [s for s in spans if s.name.startswith("chat ")]
    assert len(calls) == session.engine.ledger.llm_calls > len(TURNS)  # the summary call too


def test_model_call_spans_follow_the_genai_conventions(traced: tuple[AgentSession, list[ReadableSpan]]) -> None:
    session, spans = traced
    turn_calls = [s for s in spans if s.name == "chat offline/default" and (s.attributes or {})["mas.llm.purpose"] == "turn"]
    assert len(turn_calls) == len(TURNS)
    last = turn_calls[-1].attributes or {}
    assert last["gen_ai.operation.name"] == "chat" and last["gen_ai.provider.name"] == "offline"
    assert last["gen_ai.request.model"] == last["gen_ai.response.model"] == "offline/default"
    assert last["gen_ai.usage.input_tokens"] == session.engine.ledger.last_usage.prompt_tokens  # type: ignore[union-attr]
    assert last["gen_ai.usage.output_tokens"] > 0
    assert last["gen_ai.usage.cache_read.input_tokens"] > 0  # the offline model's prefix cache
    assert last["mas.llm.cost"] == 0.0 and last["mas.llm.cost_status"] == "ok"
    total = sum((s.attributes or {})["gen_ai.usage.input_tokens"] for s in spans if s.name.startswith("chat "))
    assert total == session.engine.ledger.prompt_tokens
    # Cache lookups are events of the call they preceded.
    for call in turn_calls:
        (lookup,) = [e for e in call.events if e.name == "mas.cache.lookup"]
        assert (lookup.attributes or {})["mas.cache.layer"] == "provider_cache"


def test_compaction_is_a_span_around_its_summarizer_call_with_the_accounting(traced: tuple[AgentSession, list[ReadableSpan]]) -> None:
    session, spans = traced
    (compaction,) = [s for s in spans if s.name == "mas.compaction"]
    attrs = compaction.attributes or {}
    assert session.compactions == 1
    assert attrs["mas.compaction.messages_before"] > attrs["mas.compaction.messages_after"]
    assert attrs["mas.compaction.llm_called"] is True and attrs["mas.compaction.model"] == "offline/default"
    for state in ("sent", "summarized", "dropped", "cut"):
        assert isinstance(attrs[f"mas.accounting.{state}.messages"], int)
        assert isinstance(attrs[f"mas.accounting.{state}.tokens"], int)
    (summary,) = _tree(spans)[compaction.context.span_id]
    assert summary.name == "chat offline/default" and (summary.attributes or {})["mas.llm.purpose"] == "summary"
    parent_turn = [s for s in spans if compaction.parent and s.context.span_id == compaction.parent.span_id]
    assert parent_turn and parent_turn[0].name == "invoke_agent tracer"


def test_no_prompt_text_leaves_without_opt_in(traced: tuple[AgentSession, list[ReadableSpan]]) -> None:
    _, spans = traced
    dumped = "\n".join(span.to_json() for span in spans)
    assert "BK-4471" not in dumped and "weather" not in dumped
    assert "gen_ai.input.messages" not in dumped


def test_message_text_goes_on_the_turn_span_only_when_opted_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAS_TEST_API_KEY", "sk-test-0123456789abcdef")
    turns = ["My key is sk-test-0123456789abcdef and my code is BK-4471.", "What is my code?"]
    _, spans = _traced(tmp_path, turns, capture=True)
    first, second = [s for s in spans if s.name == "invoke_agent tracer"]
    inputs = json.loads(str((first.attributes or {})["gen_ai.input.messages"]))
    assert inputs[0]["role"] == "user" and "BK-4471" in inputs[0]["parts"][0]["content"]
    assert "sk-test-0123456789abcdef" not in inputs[0]["parts"][0]["content"]  # keys stay masked
    outputs = json.loads(str((second.attributes or {})["gen_ai.output.messages"]))
    assert outputs[-1]["role"] == "assistant" and "BK-4471" in outputs[-1]["parts"][0]["content"]


def test_an_unfinished_turn_is_ended_as_an_error_on_close(tmp_path: Path) -> None:
    runtime = Runtime.create()
    memory = InMemorySpanExporter()
    tracing = start_tracing(runtime, TraceSettings(True, "test"), exporter=memory)
    from mas.runtime.events import Event

    runtime.emit(Event("context.assembled", {"estimated_tokens": 10}, "s1"))
    lines = tracing.close()
    (turn,) = memory.get_finished_spans()
    assert turn.status.status_code.name == "ERROR" and (turn.attributes or {})["error.type"] == "turn_not_committed"
    assert lines[-1] == "otel: 1 span(s) ended unfinished (a turn did not commit)"
    assert tracing.close() == []  # closing twice is harmless


INFRA = """
apiVersion: mas/v1
kind: Infra
metadata: {name: refusing}
spec:
  generation: {api_base: "%s", api_key_env: OTEL_TEST_API_KEY, num_retries: 0}
"""
REFUSAL = "the prompt you sent about BK-4471 is not allowed"


def test_a_failed_model_call_is_an_error_span_with_its_kind_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TEST_API_KEY", "sk-otel-test-0123456789")
    with serve() as provider:
        provider.push("status", status=400, message=REFUSAL)  # a 4xx is never retried
        (tmp_path / "agent.yaml").write_text(textwrap.dedent(AGENT).replace("offline/default", "openai/gpt-4o"))
        (tmp_path / "infra.yaml").write_text(INFRA % provider.base_url)
        manifests = load_manifest_set([tmp_path / "agent.yaml", tmp_path / "infra.yaml"])
        runtime = Runtime.create()
        session = open_session(runtime, manifests.agents[0], manifests)
        memory = InMemorySpanExporter()
        tracing = start_tracing(runtime, TraceSettings(True, "test"), agent_name="tracer", exporter=memory)
        with pytest.raises(ModelCallError, match="BadRequestError"):
            session.send("My booking reference is BK-4471.")
        lines = tracing.close()
    assert lines[-1] == "otel: 1 span(s) ended unfinished (a turn did not commit)"
    (turn,) = [s for s in memory.get_finished_spans() if s.name == "invoke_agent tracer"]
    (call,) = [s for s in memory.get_finished_spans() if s.name == "chat openai/gpt-4o"]
    assert call.parent is not None and call.parent.span_id == turn.context.span_id
    attrs = call.attributes or {}
    assert call.kind.name == "CLIENT" and call.status.status_code.name == "ERROR"
    assert attrs["error.type"] == "bad_request" and attrs["gen_ai.request.model"] == "openai/gpt-4o"
    assert attrs["gen_ai.provider.name"] == "openai" and attrs["mas.llm.purpose"] == "turn"
    assert (turn.attributes or {})["error.type"] == "bad_request" and turn.status.status_code.name == "ERROR"
    dumped = "\n".join(span.to_json() for span in memory.get_finished_spans())
    assert "BK-4471" not in dumped and "not allowed" not in dumped and "sk-otel-test" not in dumped


@pytest.mark.parametrize(
    ("model", "provider"),
    [("anthropic/claude-sonnet-4-5", "anthropic"), ("gpt-4o", "openai"), ("claude-haiku-4-5", "anthropic"),
     ("vertex_ai/gemini-2.5-flash", "gcp.vertex_ai"), ("gemini/gemini-2.5-flash", "gcp.gemini"),
     ("offline/default", "offline"), ("no-such-model", "unknown")],
)
def test_provider_names_use_the_well_known_values(model: str, provider: str) -> None:
    assert provider_name(model) == provider


# -- settings from the flag and the OTEL_* variables ---------------------------------------


@pytest.mark.parametrize(
    ("flag", "env", "enabled", "because", "endpoint"),
    [
        (False, {}, False, "default", "http://localhost:4318/v1/traces"),
        (True, {}, True, "--otel", "http://localhost:4318/v1/traces"),
        (False, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://col:4318/"}, True, "OTEL_EXPORTER_OTLP_ENDPOINT", "http://col:4318/v1/traces"),
        (False, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://col:9/t", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}, True, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://col:9/t"),
        (False, {"OTEL_TRACES_EXPORTER": "console"}, True, "OTEL_TRACES_EXPORTER", "http://localhost:4318/v1/traces"),
        (True, {"OTEL_TRACES_EXPORTER": "none"}, False, "OTEL_TRACES_EXPORTER", "http://localhost:4318/v1/traces"),
        (True, {"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}, False, "OTEL_SDK_DISABLED", "http://localhost:4318/v1/traces"),
    ],
)
def test_settings_follow_the_flag_and_the_standard_variables(flag: bool, env: dict[str, str], enabled: bool, because: str, endpoint: str) -> None:
    settings = settings_from(flag, env)
    assert (settings.enabled, settings.because, settings.endpoint) == (enabled, because, endpoint)
    assert settings.capture_content is False
    opted_in = settings_from(flag, {**env, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "True"})
    assert opted_in.capture_content is enabled


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER: unsupported exporter 'zipkin'"),
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, "OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' is not supported; expected http/protobuf or grpc"),
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "thrift"}, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'thrift'"),
    ],
)
def test_unsupported_variables_are_named(env: dict[str, str], message: str) -> None:
    with pytest.raises(TraceSettingError, match=message):
        settings_from(False, env)


@pytest.mark.parametrize(
    ("env", "protocol", "endpoint"),
    [
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "grpc", "http://localhost:4317"),
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://col:4317"}, "grpc", "http://col:4317"),
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc",
          "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://col:443"}, "grpc", "https://col:443"),
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, "http/protobuf", "http://localhost:4318/v1/traces"),
    ],
)
def test_grpc_is_chosen_by_the_protocol_variables(env: dict[str, str], protocol: str, endpoint: str) -> None:
    settings = settings_from(True, env)
    assert (settings.protocol, settings.endpoint) == (protocol, endpoint)
    exporter = otlp_exporter(settings)
    assert type(exporter).__module__.split(".")[4] == ("grpc" if protocol == "grpc" else "http")
    exporter.shutdown()


def test_every_span_has_a_kind_phoenix_and_langfuse_classify(traced: tuple[AgentSession, list[ReadableSpan]]) -> None:
    _, spans = traced
    expected = {"invoke_agent tracer": ("AGENT", "agent"), "mas.compaction": ("CHAIN", "chain"),
                "chat offline/default": ("LLM", "generation")}
    assert {s.name for s in spans} == set(expected)
    for span in spans:
        attrs = span.attributes or {}
        assert (attrs["openinference.span.kind"], attrs["langfuse.observation.type"]) == expected[span.name]
    for call in (s for s in spans if s.name.startswith("chat ")):
        attrs = call.attributes or {}
        assert attrs["llm.token_count.prompt"] == attrs["gen_ai.usage.input_tokens"]
        assert attrs["llm.token_count.total"] == attrs["llm.token_count.prompt"] + attrs["llm.token_count.completion"]
        assert attrs["llm.model_name"] == "offline/default" and attrs["session.id"]


def test_opted_in_text_goes_on_every_model_call_span_the_summarizer_s_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAS_TEST_API_KEY", "sk-test-0123456789abcdef")
    turns = [f"{FACT} My key is sk-test-0123456789abcdef.", *TURNS[1:]]
    session, spans = _traced(tmp_path, turns, capture=True)
    calls = [s for s in spans if s.name.startswith("chat ")]
    assert {(s.attributes or {})["mas.llm.purpose"] for s in calls} == {"turn", "summary"}
    for call in calls:
        attrs = call.attributes or {}
        sent = json.loads(str(attrs["gen_ai.input.messages"]))
        assert sent[0]["role"] == "system" or sent[0]["role"] == "user"
        assert "BK-4471" in str(attrs["gen_ai.input.messages"])  # every request still holds the fact
        assert "sk-test-0123456789abcdef" not in call.to_json()  # keys stay masked
        (reply,) = json.loads(str(attrs["gen_ai.output.messages"]))
        assert reply["role"] == "assistant" and reply["parts"][0]["content"] == attrs["output.value"]
        assert attrs["llm.output_messages.0.message.content"] == attrs["output.value"]
        assert json.loads(str(attrs["input.value"]))[-1]["content"] == attrs[f"llm.input_messages.{len(sent) - 1}.message.content"]
    (summary,) = [s for s in calls if (s.attributes or {})["mas.llm.purpose"] == "summary"]
    assert session.transcript[-1]["content"] == (calls[-1].attributes or {})["output.value"]
    assert (summary.attributes or {})["output.value"]  # the summary the summarizer wrote
    assert not (tmp_path / "events.jsonl").exists()


def test_the_text_behind_a_call_never_reaches_the_events_file(tmp_path: Path) -> None:
    from mas.runtime.session import record_events

    runtime = Runtime.create()
    session = _session(tmp_path, runtime)
    close = record_events(runtime, tmp_path, lambda: session.session_id)
    seen: list[Any] = []
    runtime.add_listener(lambda event: seen.append(event) if event.name == "llm.call" else None)
    session.send(FACT)
    close()
    assert seen and seen[0].content["messages"][-1]["content"] == FACT
    assert seen[0].content["reply"].text == session.transcript[-1]["content"]
    assert "BK-4471" not in (tmp_path / "events.jsonl").read_text()


def test_an_opened_session_is_one_span_over_its_turns(tmp_path: Path) -> None:
    runtime = Runtime.create()
    session = _session(tmp_path, runtime)
    memory = InMemorySpanExporter()
    tracing = start_tracing(runtime, TraceSettings(True, "test"), agent_name="tracer", exporter=memory)
    probe = _session(tmp_path, runtime)  # another session: a copy a lab probe asks
    with tracing.span("outer") as outer:
        parent = tracing.traceparent()
        with tracing.session(session.session_id, attributes={"mas.lab.item": "a-01"}):
            session.send(FACT)
            probe.send("What is my booking reference?")
            session.send("What is my booking reference?")
    from mas.runtime.events import Event

    with pytest.raises(RuntimeError), tracing.session("s-failed", parent):
        runtime.emit(Event("context.assembled", {"estimated_tokens": 10}, "s-failed"))
        raise RuntimeError("the session function raised")
    assert tracing.close()[-1] == "otel: 1 span(s) ended unfinished (a turn did not commit)"
    spans = memory.get_finished_spans()
    (mine,) = [s for s in spans if s.name == f"mas.session {session.session_id}"]
    assert mine.parent is not None and mine.parent.span_id == outer.get_span_context().span_id
    attrs = mine.attributes or {}
    assert (attrs["openinference.span.kind"], attrs["session.id"], attrs["mas.lab.item"]) == ("CHAIN", session.session_id, "a-01")
    turns = [s for s in spans if s.name == "invoke_agent tracer" and (s.attributes or {})["session.id"] != "s-failed"]
    assert len(turns) == 3 and all(t.parent is not None and t.parent.span_id == mine.context.span_id for t in turns)
    assert {(t.attributes or {})["session.id"] for t in turns} == {session.session_id, probe.session_id}
    assert {s.context.trace_id for s in spans} == {outer.get_span_context().trace_id}  # one trace
    (failed,) = [s for s in spans if s.name == "mas.session s-failed"]
    (cut,) = [s for s in spans if s.name == "invoke_agent tracer" and (s.attributes or {})["session.id"] == "s-failed"]
    assert cut.status.status_code.name == "ERROR" and cut.parent is not None and cut.parent.span_id == failed.context.span_id
    assert failed.status.status_code.name == "ERROR" and failed.parent is not None
    assert failed.parent.span_id == outer.get_span_context().span_id  # by its traceparent
    assert parent is not None and parent.startswith("00-") and f"{outer.get_span_context().span_id:016x}" in parent


def test_a_judge_call_goes_under_the_current_span_not_a_turn(tmp_path: Path) -> None:
    runtime = Runtime.create()
    session = _session(tmp_path, runtime)
    memory = InMemorySpanExporter()
    tracing = start_tracing(runtime, TraceSettings(True, "test", capture_content=True), exporter=memory)
    with tracing.span("mas-ctl eval") as scoring:
        session.engine.complete([{"role": "user", "content": "Score this: BK-4471"}], model="offline/default")
    assert tracing.close() == ["otel: 2 span(s) exported to InMemorySpanExporter"]  # nothing left open
    (call,) = [s for s in memory.get_finished_spans() if s.name.startswith("chat ")]
    assert call.parent is not None and call.parent.span_id == scoring.get_span_context().span_id
    attrs = call.attributes or {}
    assert attrs["mas.llm.purpose"] == "judge" and attrs["openinference.span.kind"] == "LLM"
    assert "BK-4471" in str(attrs["gen_ai.input.messages"])  # the judge's request, opted in


def test_importing_the_cli_and_sessions_does_not_import_opentelemetry() -> None:
    code = "import sys, mas.runtime.cli, mas.runtime.session, mas.runtime.otel; print(any(m.startswith('opentelemetry') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- OTLP/HTTP to a receiver on 127.0.0.1 --------------------------------------------------


def _run(tmp_path: Path, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    agent = tmp_path / "agent.yaml"
    agent.write_text(textwrap.dedent(AGENT))
    turns = tmp_path / "turns.jsonl"
    turns.write_text("\n".join(json.dumps(t) for t in TURNS) + "\n")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return subprocess.run(
        [MAS_CTL, "run", str(agent), "--input", str(turns), "--out", str(tmp_path / "run"), *extra],
        capture_output=True, text=True, timeout=300, env={**clean, **env}, cwd=tmp_path,
    )


def test_mas_ctl_run_exports_the_span_tree_over_otlp_http(tmp_path: Path, otlp_receiver: tuple[str, list[ExportTraceServiceRequest], list[str]]) -> None:
    url, requests, types = otlp_receiver
    done = _run(tmp_path, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": url, "OTEL_SERVICE_NAME": "otel-test"})
    assert done.returncode == 0, done.stderr
    assert requests and set(types) == {"application/x-protobuf"}
    spans, services = [], set()
    for request in requests:
        for resource_spans in request.resource_spans:
            for attr in resource_spans.resource.attributes:
                if attr.key == "service.name":
                    services.add(attr.value.string_value)
            for scope in resource_spans.scope_spans:
                assert scope.scope.name == "mas.runtime.otel"
                spans.extend(scope.spans)
    assert services == {"otel-test"}
    assert f"otel: {len(spans)} span(s) exported to {url}" in done.stderr
    by_id = {span.span_id: span for span in spans}
    roots = [s for s in spans if not s.parent_span_id]
    assert [s.name for s in roots] == ["invoke_agent tracer"] * len(TURNS)
    assert len({s.trace_id for s in roots}) == len(TURNS)  # one trace per turn

    def attrs(span: Any) -> dict[str, Any]:
        return {a.key: getattr(a.value, a.value.WhichOneof("value")) for a in span.attributes}

    compaction = next(s for s in spans if s.name == "mas.compaction")
    assert by_id[compaction.parent_span_id].name == "invoke_agent tracer"
    summary = next(s for s in spans if s.parent_span_id == compaction.span_id)
    assert attrs(summary)["mas.llm.purpose"] == "summary"
    assert "mas.accounting.sent.messages" in attrs(compaction)
    calls = [s for s in spans if s.name.startswith("chat ")]
    saved = json.loads((tmp_path / "run" / "session.json").read_text())
    assert len(calls) == saved["ledger"]["llm_calls"] > len(TURNS)
    for call in calls:
        assert call.kind == call.SPAN_KIND_CLIENT
        assert attrs(call)["gen_ai.operation.name"] == "chat"
        assert attrs(call)["gen_ai.usage.input_tokens"] > 0
        assert by_id[call.parent_span_id].trace_id == call.trace_id
    assert b"BK-4471" not in b"".join(r.SerializeToString() for r in requests)


def test_a_collector_that_is_down_is_reported(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1/traces"
    env = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": url, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "1"}
    done = _run(tmp_path, env, "--otel")
    # The session ran to its end; its trace is incomplete, so the run says degraded.
    assert done.returncode == 3, done.stderr
    assert re.search(rf"otel: 0 span\(s\) exported to {re.escape(url)}; [1-9]\d* failed to export "
                     r"\(degraded trace\)", done.stderr), done.stderr
    assert re.search(r"^degraded: [1-9]\d* span\(s\) of the trace were not exported$",
                     done.stderr, re.M), done.stderr
    assert json.loads((tmp_path / "run" / "session.json").read_text())["turns"] == len(TURNS)
    (tmp_path / "again").mkdir()
    accepted = _run(tmp_path / "again", env, "--otel", "--allow-degraded")
    assert accepted.returncode == 0, accepted.stderr
    assert "were not exported; accepted (--allow-degraded)" in accepted.stderr


def test_bad_variables_are_one_line_errors(tmp_path: Path) -> None:
    done = _run(tmp_path, {"OTEL_TRACES_EXPORTER": "zipkin"})
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("error: OTEL_TRACES_EXPORTER: unsupported exporter 'zipkin'")
    assert "Traceback" not in done.stderr


def test_without_the_extra_the_flag_is_an_error_and_the_variables_a_warning(tmp_path: Path) -> None:
    agent = tmp_path / "agent.yaml"
    agent.write_text(textwrap.dedent(AGENT))
    turns = tmp_path / "turns.jsonl"
    turns.write_text(json.dumps("hello") + "\n")
    # A fresh interpreter in which the OpenTelemetry SDK cannot be imported.
    code = textwrap.dedent(
        """
        import sys
        sys.modules["opentelemetry.sdk"] = None
        from mas.runtime.cli import main
        main(sys.argv[1:])
        """
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    base = [sys.executable, "-c", code, "run", str(agent), "--input", str(turns)]
    flagged = subprocess.run([*base, "--out", str(tmp_path / "a"), "--otel"], capture_output=True,
                             text=True, timeout=300, env=clean, cwd=tmp_path)
    assert flagged.returncode == 2 and "Traceback" not in flagged.stderr
    assert "error: tracing needs the OpenTelemetry SDK" in flagged.stderr
    assert "pip install 'mas-runtime[otel]'" in flagged.stderr
    by_env = subprocess.run([*base, "--out", str(tmp_path / "b")], capture_output=True, text=True,
                            timeout=300, env={**clean, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"},
                            cwd=tmp_path)
    assert by_env.returncode == 0, by_env.stderr
    assert "warning: OTEL_EXPORTER_OTLP_ENDPOINT is set, but no traces are exported" in by_env.stderr
