"""Probes asked in isolation, their records, and the evidence metric in the lab's table."""

from __future__ import annotations

import json
from pathlib import Path

from mas.library.lab import run_experiment
from mas.library.lab._kernel_session import run_kernel_session
from mas.library.lab.evidence import content_words, locate
from mas.library.lab.experiment import load_lab_experiment
from mas.library.lab.probes import ProbeLog, read_probe_records
from mas.library.lab.rundir import RunFolder
from mas.library.lab.runner import plan_jobs
from mas.runtime import Runtime
from mas.runtime.session import open_session

LOCOMO = Path(__file__).resolve().parents[1] / "fixtures" / "benchmarks" / "locomo_tiny.json"
EVIDENCE = "[EvidenceVerbatim, EvidenceWithSummary, EvidenceWithRecall]"


def _experiment(root: Path, probes: str = "isolated") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "agent.yaml").write_text(
        "apiVersion: mas/v1\nkind: Agent\nmetadata: {name: reader}\nspec:\n"
        "  models: [{id: main, model: any, context_window: 8000, max_tokens: 256}]\n")
    path = root / "experiment.yaml"
    path.write_text(
        "experiment:\n  name: bench\n  models: {main: offline/default, judge: offline/default}\n"
        "  applications: [{manifest: ./agent.yaml}]\n"
        "  flavours:\n    - name: recall\n      patch: {context_manager: {type: summarising, "
        "params: {recall: true}}}\n"
        "    - name: window\n      patch: {context_manager: {type: sliding_window, "
        "params: {keep_turns: 1}}}\n"
        f"  dataset: {{path: {LOCOMO}, format: locomo, probes: {probes}}}\n"
        f"  application:\n    post:\n      - type: eval_mce\n        config: {{metrics: {EVIDENCE}}}\n")
    return path


def test_each_question_is_asked_from_its_own_copy(runtime: Runtime, tmp_path: Path) -> None:
    outcome = run_experiment(runtime, _experiment(tmp_path), runs_root=tmp_path / "runs")
    assert outcome.ok
    folder = outcome.run.path / "sessions" / "recall" / "tiny-1" / "run-0"
    transcript = json.loads((folder / "transcript.json").read_text())
    users = [m["content"] for m in transcript["messages"] if m["role"] == "user"]
    assert len(users) == 2 and all(u.startswith("Session ") for u in users)  # no question
    records = read_probe_records(folder)
    assert [r["probe"] for r in records] == [0, 1, 2, 3]
    assert all(r["mode"] == "isolated" and r["llm_calls"] >= 1 for r in records)
    assert records[0]["evidence"] == [{"verbatim": True, "summary": False, "summary_words": 0.0,
                                       "recall": False}]
    assert "Pimenta" not in json.dumps([{k: v for k, v in r.items() if k != "answer"}
                                        for r in records])  # numbers, never text
    events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    assert {e.get("session_id") for e in events} == {transcript["session_id"]}
    trajectories = [json.loads(line) for line in
                    (outcome.run.path / "trajectories.jsonl").read_text().splitlines()]
    first = next(t for t in trajectories if t["flavour"] == "recall" and t["item"] == "tiny-1")
    assert [p["mode"] for p in first["probes"]] == ["isolated"] * 4
    assert first["probes"][3]["hit"] is None  # adversarial: no expected answer
    assert first["probe_calls"] == sum(r["llm_calls"] for r in records)
    results = json.loads((outcome.run.path / "results.json").read_text())["metrics"]
    verbatim = results["recall"]["EvidenceVerbatim"]
    # Pooled over the probes with evidence (3 + 1), with Wilson's interval.
    assert verbatim["method"] == "wilson_pooled" and verbatim["n"] == 4
    assert verbatim["low"] < verbatim["mean"] <= verbatim["high"] <= 1
    assert "EvidenceWithRecall[4]" in results["window"]
    table = (outcome.run.path / "results.txt").read_text()
    assert "evidence verbatim in request" in table and "evidence + recall [1]" in table


def test_a_probe_leaves_the_session_as_it_was(runtime: Runtime, tmp_path: Path) -> None:
    from mas.library.lab.probes import Snapshot, ask_isolated

    experiment = load_lab_experiment(runtime, _experiment(tmp_path))
    run = RunFolder(tmp_path / "run")
    job = plan_jobs(experiment, run, runtime)[0]
    session = open_session(runtime, job.flavour.agent, job.flavour.manifests,
                           session_id=job.session_id, state_path=tmp_path / "s" / "session.json")
    for index in range(len(job.item.turns)):
        session.send(job.item.turn(index).user)
    before = json.dumps(session.to_state(), sort_keys=True, default=str)
    with Snapshot(session) as snapshot:
        first = ask_isolated(job, snapshot, 0, job.item.probes[0], [])
    with Snapshot(session) as snapshot:
        again = ask_isolated(job, snapshot, 0, job.item.probes[0], [])
    assert json.dumps(session.to_state(), sort_keys=True, default=str) == before
    # The same question from the same state gets the same request: the first left nothing.
    assert first["prompt_tokens"] == again["prompt_tokens"] and first["answer"] == again["answer"]


def test_a_resumed_session_asks_only_the_probes_not_recorded(runtime: Runtime,
                                                             tmp_path: Path) -> None:
    experiment = load_lab_experiment(runtime, _experiment(tmp_path))
    job = plan_jobs(experiment, RunFolder(tmp_path / "run"), runtime)[0]
    job.folder.mkdir(parents=True)
    run_kernel_session(job)
    records = read_probe_records(job.folder)
    # A kill while the third was written: two whole lines and a torn one.
    (job.folder / "probes.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in records[:2]) + '{"probe": 2, "ans')
    (job.folder / "transcript.json").unlink()
    assert ProbeLog(job.folder).done() == {0, 1}
    run_kernel_session(job)
    again = read_probe_records(job.folder)
    assert [r["probe"] for r in again] == [0, 1, 2, 3]
    assert again[:2] == records[:2] and again[2]["answer"] == records[2]["answer"]


def test_inline_probes_are_located_too(runtime: Runtime, tmp_path: Path) -> None:
    """A jsonl item's inline probes get records as well (evidence, no answer copy)."""
    root = tmp_path / "inline"
    _experiment(root)
    dataset = root / "d.jsonl"
    dataset.write_text(json.dumps({"id": "x", "turns": ["Ines: my cat is called Pimenta.",
                                                        "What is the cat called?"],
                                   "probes": [{"turn": 1, "expected": ["Pimenta"],
                                               "evidence": ["Ines: my cat is called Pimenta."]}]})
                       + "\n")
    path = root / "experiment.yaml"
    path.write_text(path.read_text().replace(f"{{path: {LOCOMO}, format: locomo, probes: isolated}}",
                                             "./d.jsonl"))
    outcome = run_experiment(runtime, path, runs_root=tmp_path / "runs", flavours=["recall"])
    folder = outcome.run.path / "sessions" / "recall" / "x" / "run-0"
    (record,) = read_probe_records(folder)
    assert record["mode"] == "inline" and record["evidence"][0]["verbatim"] is True
    assert "answer" not in record


def test_locate_folds_white_space_and_counts_content_words() -> None:
    located = locate(["Ines:  my cat\nis Pimenta", "Tomas runs the Lisbon marathon"],
                     "ines: my cat is pimenta", "tomas ran in lisbon, a marathon", "")
    assert located[0]["verbatim"] and not located[0]["summary"]
    assert located[1]["summary_words"] == 0.75  # tomas, lisbon, marathon of 4 (runs missed)
    assert content_words("The cat and THE dog") == {"cat", "dog"}


def test_a_longmemeval_instance_runs_with_its_has_answer_turns(runtime: Runtime,
                                                                tmp_path: Path) -> None:
    root = tmp_path / "lme"
    path = _experiment(root)
    path.write_text(path.read_text().replace(
        f"{{path: {LOCOMO}, format: locomo, probes: isolated}}",
        f"{{path: {LOCOMO.with_name('longmemeval_tiny.json')}, format: longmemeval}}"))
    outcome = run_experiment(runtime, path, runs_root=tmp_path / "runs", flavours=["recall"])
    assert outcome.ok
    folder = outcome.run.path / "sessions" / "recall" / "tiny-q1" / "run-0"
    (record,) = read_probe_records(folder)
    assert record["kind"] == "single-session-user" and record["evidence"][0]["verbatim"] is True
    results = json.loads((outcome.run.path / "results.json").read_text())["metrics"]["recall"]
    assert results["EvidenceVerbatim"]["n"] == 2 and results["EvidenceVerbatim"]["mean"] == 1.0


def test_what_degrades_in_a_copy_degrades_the_session(runtime: Runtime, tmp_path: Path) -> None:
    """An uncapped stack at a small window is cut by the final trim, in the copies too: the
    session counts those cuts with the probe named, and says degraded."""
    sample = (Path(__file__).resolve().parents[2] / "library-lab" / "examples"
              / "long-conversations" / "locomo-sample.json")
    path = _experiment(tmp_path)
    path.write_text(path.read_text()
                    .replace("context_window: 8000", "context_window: 1600")
                    .replace(f"{{path: {LOCOMO}, format: locomo, probes: isolated}}",
                             f"{{path: {sample}, format: locomo, limit: 1, questions: 2}}"))
    (tmp_path / "agent.yaml").write_text((tmp_path / "agent.yaml").read_text().replace(
        "context_window: 8000", "context_window: 1600"))
    path.write_text(path.read_text().replace(
        "{type: sliding_window, params: {keep_turns: 1}}",
        "{type: stack, params: {max_tokens: null}}"))  # no token bound: the trim cuts
    outcome = run_experiment(runtime, path, runs_root=tmp_path / "runs", flavours=["window"])
    folder = outcome.run.path / "sessions" / "window" / "sample-1" / "run-0"
    transcript = json.loads((folder / "transcript.json").read_text())
    assert transcript["status"] == "degraded"
    assert transcript["degradation"]["reasons"]["budget_cuts"].startswith("probe 1: ")
