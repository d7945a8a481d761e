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
from mas.library.eval.mce.isolated import (
    BackendChoice,
    MceBackendError,
    MceWorker,
    _clean_env,
    choose_backend,
    find_python,
)
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


def _auto(monkeypatch: pytest.MonkeyPatch, where: Path) -> None:
    """Nobody names a backend or a Python (the suite's pin unset), working in ``where``."""
    monkeypatch.delenv("MAS_EVAL_BACKEND", raising=False)
    monkeypatch.delenv("MAS_MCE_PYTHON", raising=False)
    monkeypatch.chdir(where)


def _auto_score(runtime: Runtime, folders: list[Path], **fields: Any) -> dict[str, Any]:
    config = EvalConfig(model="offline/default", metrics=["GoalSuccessRate", "LLMCalls"],
                        overwrite=True, **fields)
    return evaluate_runs(runtime, folders, config, engine=Engine(runtime, session_id="auto"),
                         scope=judge_scope(config)).metadata


def _fallback_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelname == "WARNING" and "scored by mas-lab's rubrics" in r.getMessage()]


@needs_mce
def test_by_default_the_stock_ids_are_mces_own_where_its_venv_is_found(
        runtime: Runtime, kit: SimpleNamespace, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    # As `make demo` runs: from the checkout (here a folder below it), .venv-mce beside it.
    folder = kit.write_run(tmp_path / "run", messages=SESSION, final_answer=SESSION[-1]["content"])
    _auto(monkeypatch, REPO / "library-eval")
    assert EvalConfig().backend == "auto"
    meta = _auto_score(runtime, [folder])
    assert (meta["backend"], meta["backend_reason"]) == ("mce", f"auto: {MCE_PYTHON}")
    assert meta["mce_version"] == "1.2.9"
    metrics = kit.read_metrics(folder)["metrics"]
    assert {k: v["detail"]["backend"] for k, v in metrics.items()} == {
        "GoalSuccessRate": "mce", "LLMCalls": "native"}
    assert _fallback_lines(caplog) == []


def test_without_the_venv_the_default_falls_back_to_native_and_says_so_once(
        runtime: Runtime, kit: SimpleNamespace, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    folders = [kit.write_run(tmp_path / name, messages=SESSION,
                             final_answer=SESSION[-1]["content"]) for name in ("a", "b")]
    _auto(monkeypatch, tmp_path)
    meta = _auto_score(runtime, folders)
    assert (meta["backend"], meta["backend_reason"]) == (
        "native", "no .venv-mce here or above, nor $MAS_MCE_PYTHON")
    assert "mce_version" not in meta
    assert _fallback_lines(caplog) == [
        "the stock MCE ids are scored by mas-lab's rubrics (native), not by MCE's own "
        "classes: no .venv-mce here or above, nor $MAS_MCE_PYTHON (make mce-venv)"]
    for folder in folders:
        assert kit.read_metrics(folder)["metrics"]["GoalSuccessRate"]["detail"]["backend"] == \
            "native"


def test_a_venv_whose_worker_does_not_start_falls_back_only_by_default(
        runtime: Runtime, kit: SimpleNamespace, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    # A half-built .venv-mce: its Python exists, MCE does not.
    half = tmp_path / ".venv-mce" / "bin" / "python"
    half.parent.mkdir(parents=True)
    half.write_text("#!/bin/sh\necho 'No module named metrics_computation_engine' >&2\nexit 1\n")
    half.chmod(0o755)
    folder = kit.write_run(tmp_path / "runs" / "one", messages=SESSION,
                           final_answer=SESSION[-1]["content"])
    _auto(monkeypatch, tmp_path / "runs")
    meta = _auto_score(runtime, [folder])
    assert meta["backend"] == "native"
    assert meta["backend_reason"].startswith(f"its worker ({half}) did not start: ")
    [line] = _fallback_lines(caplog)
    assert "No module named metrics_computation_engine" in line
    with pytest.raises(MceBackendError, match="No module named metrics_computation_engine"):
        _auto_score(runtime, [folder], backend="mce")


@needs_mce
def test_a_named_backend_wins_over_the_venv_found(
        runtime: Runtime, kit: SimpleNamespace, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    folder = kit.write_run(tmp_path / "run", messages=SESSION, final_answer=SESSION[-1]["content"])
    _auto(monkeypatch, REPO)
    meta = _auto_score(runtime, [folder], backend="native")
    assert (meta["backend"], meta["backend_reason"]) == ("native", "backend: native")
    monkeypatch.setenv("MAS_EVAL_BACKEND", "native")
    assert choose_backend("auto") == BackendChoice("native", "MAS_EVAL_BACKEND=native")
    # the step's own field wins over the variable
    assert choose_backend("mce") == BackendChoice("mce", "backend: mce", MCE_PYTHON)
    assert _fallback_lines(caplog) == []  # a native that was asked for is no fallback
    monkeypatch.setenv("MAS_EVAL_BACKEND", "MCE")
    with pytest.raises(MceBackendError, match=r"^MAS_EVAL_BACKEND: must be one of auto, "
                                              r"native, mce \(got 'MCE'\)$"):
        choose_backend("auto")
    monkeypatch.setenv("MAS_EVAL_BACKEND", "mce")
    monkeypatch.chdir(tmp_path)  # mce named where no venv is found: bad input, not native
    with pytest.raises(MceBackendError, match="run `make mce-venv`"):
        choose_backend("auto")


@needs_mce
def test_mas_ctl_eval_defaults_to_mce_where_the_venv_is_found(
        kit: SimpleNamespace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = kit.write_run(tmp_path / "run", messages=SESSION, final_answer=SESSION[-1]["content"])
    _auto(monkeypatch, REPO)
    result = CliRunner().invoke(eval_cli.eval_command, [
        str(folder), "--model", "offline/default", "-m", "GoalSuccessRate", "--json"])
    assert result.exit_code == 0, result.output
    meta = json.loads(result.output[: result.output.rindex("}") + 1])["metadata"]
    assert (meta["backend"], meta["backend_reason"]) == ("mce", f"auto: {MCE_PYTHON}")
    assert kit.read_metrics(folder)["metrics"]["GoalSuccessRate"]["detail"]["backend"] == "mce"
