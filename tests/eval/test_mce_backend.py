"""``backend: mce``: the real MCE (``.venv-mce``) behind the stock ids, judged by our engine.

These tests drive the real worker in MCE's own venv; nothing of MCE is mocked. They skip
where ``make mce-venv`` has not built the venv (MCE needs Python 3.11+).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner

from mas.library.eval import EvalConfig, evaluate_runs, judge_scope
from mas.library.eval import cli as eval_cli
from mas.library.eval.mce.isolated import MceBackendError, MceWorker, _clean_env, find_python
from mas.library.eval.mce.runner import MCE_IDS
from mas.library.eval.mce.spans import otel_rows
from mas.library.eval.run import load_run
from mas.runtime import Runtime
from mas.runtime.engine import Engine
from mas.runtime.protocols import ModelReply

REPO = Path(__file__).resolve().parents[2]
MCE_PYTHON = REPO / ".venv-mce" / "bin" / "python"
needs_mce = pytest.mark.skipif(not MCE_PYTHON.is_file(),
                               reason="no .venv-mce (run `make mce-venv`; MCE needs Python 3.11+)")

SESSION = [
    {"role": "user", "content": "Please keep this on file: order A-1042 belongs to Ingrid."},
    {"role": "assistant", "content": "Noted: order A-1042 belongs to Ingrid."},
    {"role": "user", "content": "When does order A-1042 ship?"},
    {"role": "assistant", "content": "",
     "tool_calls": [{"id": "c1", "type": "function",
                     "function": {"name": "lookup", "arguments": '{"id": "A-1042"}'}}]},
    {"role": "tool", "tool_call_id": "c1", "name": "lookup", "content": '{"ships": "12 May"}'},
    {"role": "assistant", "content": "Order A-1042 ships on 12 May."},
]


@pytest.fixture(scope="module")
def runtime() -> Runtime:
    return Runtime.create()


@pytest.fixture(scope="module")
def worker() -> Any:
    if not MCE_PYTHON.is_file():
        pytest.skip("no .venv-mce (run `make mce-venv`)")
    with MceWorker(MCE_PYTHON) as running:
        yield running


def _pattern(key: str) -> str:
    return re.sub(r"\.\d+\.", ".N.", key)


@needs_mce
def test_rows_have_the_shape_of_the_trace_in_mces_wheel(worker: MceWorker, kit: SimpleNamespace,
                                                        tmp_path: Path) -> None:
    sample = worker.call({"op": "sample"})["rows"]
    ours = otel_rows(load_run(kit.write_run(tmp_path / "run", messages=SESSION,
                                            final_answer=SESSION[-1]["content"])))
    assert {frozenset(row) for row in ours} == {frozenset(sample[0])}  # the same columns
    sample_chat = {_pattern(k) for r in sample if r["SpanName"].endswith(".chat")
                   for k in r["SpanAttributes"] if k.startswith("gen_ai.")}
    ours_chat = {_pattern(k) for r in ours if r["SpanName"].endswith(".chat")
                 for k in r["SpanAttributes"] if k.startswith("gen_ai.")}
    assert ours_chat - sample_chat == set()  # every gen_ai key we write, MCE's trace has too
    sample_tool = {k for r in sample if r["SpanName"].endswith(".tool") for k in r["SpanAttributes"]}
    ours_tool = {k for r in ours if r["SpanName"].endswith(".tool") for k in r["SpanAttributes"]}
    assert {"traceloop.entity.name", "traceloop.entity.input", "traceloop.entity.output"} <= \
        ours_tool & sample_tool


@needs_mce
def test_mce_builds_the_session_entity_the_metrics_read(worker: MceWorker, kit: SimpleNamespace,
                                                        tmp_path: Path) -> None:
    sample = worker.call({"op": "session", "rows": worker.call({"op": "sample"})["rows"]})
    assert sample["session"]["input_query"] == "who was the 31st president of the united states?"
    run = load_run(kit.write_run(tmp_path / "run", messages=SESSION,
                                 final_answer=SESSION[-1]["content"]))
    session = worker.call({"op": "session", "rows": otel_rows(run)})["session"]
    assert session["span_types"] == {"llm": 3, "tool": 1}  # one call per assistant message
    # every message once, in order; the empty tool-calling reply has no text to judge
    assert session["roles"] == [m["role"] for m in SESSION if m["content"]]
    assert session["tool_calls"] == ["lookup"]
    assert session["input_query"] == SESSION[0]["content"]
    assert session["final_response"] == "Order A-1042 ships on 12 May."
    assert session["conversation_chars"] > sum(len(m["content"]) for m in SESSION) - 50


class _PartlyDown:
    """The real engine, except that one panel model's calls fail (a provider outage)."""

    def __init__(self, engine: Engine, down: str) -> None:
        self.engine, self.down = engine, down

    def complete(self, messages: list[dict[str, Any]], *, model: str, **kwargs: Any) -> ModelReply:
        if model == self.down:
            raise ConnectionError("provider unreachable")
        return self.engine.complete(messages, model=model, **kwargs)


def _score(runtime: Runtime, folders: list[Path], backend: str,
           **extra: Any) -> list[dict[str, Any]]:
    config = EvalConfig(model="offline/default", backend=backend, overwrite=True,
                        mce_python=str(MCE_PYTHON), **extra)
    engine = Engine(runtime, session_id="mce-contract")
    panel_engine = _PartlyDown(engine, "down/judge") if config.panel else engine
    report = evaluate_runs(runtime, folders, config, engine=panel_engine,
                           scope=judge_scope(config))
    assert report.metadata["backend"] == backend
    return [json.loads((folder / "metrics.json").read_text()) for folder in folders]


@needs_mce
def test_both_backends_file_the_same_ids_fields_and_labels(runtime: Runtime, kit: SimpleNamespace,
                                                           tmp_path: Path) -> None:
    good = kit.write_run(tmp_path / "good", messages=SESSION, final_answer=SESSION[-1]["content"])
    lost = kit.write_run(tmp_path / "lost", messages=SESSION[:-1] + [
        {"role": "assistant", "content": "I don't know: nothing here mentions a ship date."}],
        final_answer="I don't know: nothing here mentions a ship date.")
    natives = _score(runtime, [good, lost], "native")
    mces = _score(runtime, [good, lost], "mce")
    for native, mce in zip(natives, mces, strict=True):
        kit.assert_schema_valid(native)
        kit.assert_schema_valid(mce)
        assert set(mce["metrics"]) == set(native["metrics"]) and set(mce["metrics"]) >= MCE_IDS
        for metric_id, record in mce["metrics"].items():
            other = native["metrics"][metric_id]
            assert set(record) == set(other), metric_id
            assert record["status"] == other["status"], metric_id
            assert record["detail"]["backend"] == ("mce" if metric_id in MCE_IDS else "native")
            if metric_id in MCE_IDS:
                assert record["status"] == "scored" and record["value"] in (0.0, 1.0)
                assert record["detail"]["mce_version"] == "1.2.9"
                assert record["detail"]["judge_calls"] == 1 and record["detail"]["n_votes"] == 1
                # MCE's own prompt was sent, not our rubric
                assert record["detail"]["prompt_sha256"] != other["detail"]["prompt_sha256"]
            else:
                assert record["value"] == other["value"], metric_id
        assert mce["run_quality"]["status"] == native["run_quality"]["status"]
    # MCE's GoalSuccessRate reads the final response: the lost answer fails it
    assert [m["metrics"]["GoalSuccessRate"]["value"] for m in mces] == [1.0, 0.0]


@needs_mce
def test_unscored_votes_stay_in_the_denominator_on_both_backends(
        runtime: Runtime, kit: SimpleNamespace, tmp_path: Path) -> None:
    folder = kit.write_run(tmp_path / "run", messages=SESSION, final_answer=SESSION[-1]["content"])
    ids = ["GoalSuccessRate", "Consistency"]
    [native] = _score(runtime, [folder], "native", panel=["down/judge"], metrics=ids)
    [mce] = _score(runtime, [folder], "mce", panel=["down/judge"], metrics=ids)
    for metric_id in ids:
        a, b = native["metrics"][metric_id], mce["metrics"][metric_id]
        # one vote of two is unscored: a binary metric needs a majority of *all* votes
        assert a["status"] == b["status"] == "unscored" and a["value"] is b["value"] is None
        assert (b["detail"]["n_votes"], b["detail"]["n_unscored"]) == (2, 1)
        assert a["error"] == b["error"] and a["error"].startswith("no value: needs a majority")
    assert mce["run_quality"]["status"] == "unscored"


def test_the_worker_gets_no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123")
    monkeypatch.setenv("HF_TOKEN", "hf_abc")
    env = _clean_env()
    assert "OPENAI_API_KEY" not in env and "HF_TOKEN" not in env
    assert env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True" and "PATH" in env


def test_a_missing_venv_is_one_line_naming_the_field(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MAS_MCE_PYTHON", raising=False)
    with pytest.raises(MceBackendError, match=r"^eval_mce.config.mce_python: no such Python: "):
        find_python(str(tmp_path / "nope" / "python"))
    with pytest.raises(MceBackendError, match="run `make mce-venv`"):
        find_python(start=tmp_path)
    monkeypatch.setenv("MAS_MCE_PYTHON", str(tmp_path / "gone"))
    with pytest.raises(MceBackendError, match="^MAS_MCE_PYTHON: no such Python"):
        find_python()


def test_a_worker_that_dies_is_reported_with_its_exit_code(tmp_path: Path) -> None:
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'no MCE here' >&2\nexit 3\n")
    fake.chmod(0o755)
    with pytest.raises(MceBackendError, match=r"exited with code 3: no MCE here"):
        MceWorker(fake)


@needs_mce
def test_mas_ctl_eval_backend_mce(kit: SimpleNamespace, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    folder = kit.write_run(tmp_path / "runs" / "one", messages=SESSION,
                           final_answer=SESSION[-1]["content"])
    monkeypatch.setenv("MAS_MCE_PYTHON", str(MCE_PYTHON))
    result = CliRunner().invoke(eval_cli.eval_command, [
        str(folder), "--backend", "mce", "--model", "offline/default", "-m", "GoalSuccessRate"])
    assert result.exit_code == 0, result.output
    assert "backend mce: metrics-computation-engine 1.2.9, mce-metrics-plugin 0.1.1" in result.output
    record = kit.read_metrics(folder)["metrics"]["GoalSuccessRate"]
    assert record["detail"]["backend"] == "mce" and record["value"] == 1.0
    assert record["detail"]["votes"][0]["prompt_tokens"] > 0  # through the engine's ledger


@needs_mce
def test_backend_mce_rescores_what_the_native_backend_filed(kit: SimpleNamespace, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # The lab's eval step files the stock ids natively; `eval --backend mce` over those
    # sessions must not keep the native values under MCE's name.
    folder = kit.write_run(tmp_path / "runs" / "one", messages=SESSION,
                           final_answer=SESSION[-1]["content"])
    monkeypatch.setenv("MAS_MCE_PYTHON", str(MCE_PYTHON))
    args = [str(folder), "--model", "offline/default", "-m", "GoalSuccessRate", "-m", "LLMCalls"]
    backends: list[dict[str, str]] = []
    outputs: list[str] = []
    for extra in ([], ["--backend", "mce"], ["--backend", "mce"], ["--backend", "native"]):
        result = CliRunner().invoke(eval_cli.eval_command, [*args, *extra])
        assert result.exit_code == 0, result.output
        metrics = kit.read_metrics(folder)["metrics"]
        backends.append({k: v["detail"]["backend"] for k, v in metrics.items()})
        outputs.append(result.output)
    assert backends == [{"GoalSuccessRate": "native", "LLMCalls": "native"},
                        {"GoalSuccessRate": "mce", "LLMCalls": "native"},
                        {"GoalSuccessRate": "mce", "LLMCalls": "native"},
                        {"GoalSuccessRate": "native", "LLMCalls": "native"}]
    assert ": 1 metric(s)" in outputs[1] and "already scored" in outputs[2]


@needs_mce
def test_the_backend_mce_example_runs_as_documented(runtime: Runtime, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from mas.library.lab import run_experiment

    monkeypatch.setenv("MAS_MCE_PYTHON", str(MCE_PYTHON))
    example = REPO / "library-eval" / "examples" / "mce" / "backend-mce" / "experiment.yaml"
    outcome = run_experiment(runtime, example, runs_root=tmp_path / "runs", limit=1)
    assert outcome.ok
    assert outcome.records["eval_mce"].metadata["mce_version"] == "1.2.9"
    [path] = sorted((outcome.run.path / "sessions" / "summarising").glob("*/run-0/metrics.json"))
    metrics = json.loads(path.read_text())["metrics"]
    assert {k: v["detail"]["backend"] for k, v in metrics.items()} == {
        "GoalSuccessRate": "mce", "InformationRetention": "mce", "ContextPreservation": "mce",
        "FactRecall": "native"}
