"""The ray backend on a real local Ray instance (2 CPUs): the same run folder as the local
runner apart from timing fields, a dead worker failing only its session and its retry
giving a local retry's folder (issue 26 item 11), a killed driver resuming to the same
results, degraded sessions and ``max_concurrency`` as locally, and the start-up plugin
check.

Not collected by itself: ``test_ray_runner.py`` runs this file in a network namespace
whose only interface is loopback, because Ray binds the host's own address."""

from __future__ import annotations

import io
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import ray
from ray import cloudpickle

from mas.library.lab import SessionJob, run_experiment
from mas.library.lab.executors._ray_worker import plugin_inventory
from mas.library.lab.executors.ray_backend import WORKER_LOST, check_cluster, import_ray
from mas.library.lab.executors.ray_reaper import below, process_table
from mas.library.lab.sessions import default_session_function
from mas.runtime import Runtime
from mas.runtime.engine._litellm import load_litellm
from mas.runtime.errors import MasError

TIMING_FIELDS = {"ts", "latency_s", "setup_s", "monotonic_time", "system_time", "duration", "seconds",
                 "created"}
"""The fields docs/lab.md lists as timing: the only ones allowed to differ between backends."""

# These cases judge one vote at a time, as they did before each vote got a provider cache of
# its own (issue 26 item 11); the item-11 case uses the stock, concurrent judge. The
# sessions themselves run two at a time.
JUDGE = "      - {type: eval_mce, config: {max_concurrency: 1}}\n"
POST = "      - {type: run_sessions, config: {max_concurrency: 2}}\n" + JUDGE

def experiment(make_experiment: Any, root: Path, name: str, post: str = POST) -> Path:
    """The tiny experiment under its own name: its own session ids, so no process (driver or
    worker) has seen them before in this test run."""
    path: Path = make_experiment(root, post=post)
    path.write_text(path.read_text().replace("name: tiny", f"name: {name}"))
    return path


def cold_provider() -> None:
    """Forget this process's simulated provider cache, as a new ``mas-ctl`` process starts.

    The judge's votes all probe one simulated conversation, so votes of an earlier run in
    this process would count as cached prefix in the next one.
    """
    for entry in load_litellm().custom_provider_map:
        cache = getattr(entry["custom_handler"], "prefix_cache", None)
        if cache is not None:
            cache.clear()


# Session functions defined here travel to the workers by value (this module is not
# importable there).
cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """One local Ray head for the module, shut down after it; its address."""
    # "local": a new instance even when `ray start` left one running on this machine.
    context = ray.init(address="local", num_cpus=2, include_dashboard=False,
                       logging_level="WARNING")
    try:
        yield str(context.address_info["address"])
    finally:
        ray.shutdown()


def _normal(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: "<timing>" if k in TIMING_FIELDS else _normal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value


def differences(left: Path, right: Path) -> list[str]:
    """Files of two run folders that differ in more than timing fields (report.html aside,
    it prints the creation time)."""
    names = {p.relative_to(left).as_posix() for p in left.rglob("*") if p.is_file()}
    other = {p.relative_to(right).as_posix() for p in right.rglob("*") if p.is_file()}
    found = sorted(f"only in one: {name}" for name in names ^ other if name != ".lock")
    for name in sorted(names & other):
        raw_a, raw_b = (left / name).read_bytes(), (right / name).read_bytes()
        if raw_a == raw_b or name == "report.html":
            continue
        a, b = raw_a.decode("utf-8", "replace"), raw_b.decode("utf-8", "replace")
        if name.endswith(".jsonl"):
            rows = [_normal(json.loads(x)) for x in a.splitlines()]
            other_rows = [_normal(json.loads(x)) for x in b.splitlines()]
        elif name.endswith(".json"):
            rows, other_rows = [_normal(json.loads(a))], [_normal(json.loads(b))]
        else:
            found.append(name)
            continue
        if rows != other_rows:
            found.append(f"{name}: {_first_difference(rows, other_rows)}")
    return found


def _first_difference(rows: list[Any], other: list[Any]) -> str:
    """Where two lists of JSON rows first part: row number and key (for the failure)."""
    if len(rows) != len(other):
        return f"{len(rows)} rows against {len(other)}"
    for number, (row, other_row) in enumerate(zip(rows, other, strict=True)):
        if row != other_row:
            keys = sorted(k for k in set(row) | set(other_row) if row.get(k) != other_row.get(k)) \
                if isinstance(row, dict) and isinstance(other_row, dict) else []
            return f"row {number} differs in {keys}"
    return "?"


@pytest.fixture(scope="module")
def both(cluster: str, tmp_path_factory: pytest.TempPathFactory, runtime: Runtime,
         make_experiment: Any) -> tuple[Path, Path, Path]:
    """The tiny experiment run locally and on Ray; the two run folders and the file."""
    root = tmp_path_factory.mktemp("ray")
    path = experiment(make_experiment, root / "exp", "ray-same")
    cold_provider()
    local = run_experiment(runtime, path, runs_root=root / "local")
    cold_provider()
    progress = io.StringIO()
    on_ray = run_experiment(runtime, path, runs_root=root / "ray", backend="ray", stream=progress)
    assert local.ok and on_ray.ok
    # The driver draws the same bar as locally (a line a tenth of the way off a terminal).
    assert "] 6/6 sessions  ETA 0:00" in progress.getvalue()
    assert "sessions: 6 run in" in progress.getvalue()
    return local.run.path, on_ray.run.path, path


def test_ray_gives_the_local_results(both: tuple[Path, Path, Path]) -> None:
    local, on_ray, _ = both
    for name in ("results.json", "results.txt"):
        assert (local / name).read_bytes() == (on_ray / name).read_bytes(), name
    metrics = sorted(p.relative_to(local) for p in local.glob("sessions/*/*/*/metrics.json"))
    assert len(metrics) == 6
    for name in metrics:
        assert (local / name).read_bytes() == (on_ray / name).read_bytes(), name
    assert differences(local, on_ray) == []


def test_only_the_driver_wrote_the_run_folder(both: tuple[Path, Path, Path]) -> None:
    _, on_ray, _ = both
    # The workers played in scratch folders; what they returned landed under the run.
    session = on_ray / "sessions" / "stack" / "a-01" / "run-0"
    assert {p.name for p in session.iterdir()} >= {"item.json", "events.jsonl", "session.json",
                                                   "transcript.json", "metrics.json"}
    rows = json.loads((on_ray / "sessions.json").read_text())["sessions"]
    assert [r["status"] for r in rows] == ["ok"] * 6


def test_a_finished_ray_run_resumes_at_once(both: tuple[Path, Path, Path],
                                            runtime: Runtime) -> None:
    _, on_ray, path = both
    again = run_experiment(runtime, path, runs_root=on_ray.parents[1], backend="ray")
    assert again.resumed and again.run.path == on_ray
    assert {r.status for r in again.records.values()} == {"skipped"}


def dying(job: SessionJob) -> None:
    """The kernel session, except that the worker playing item a-02 dies on the spot."""
    if job.item.id == "a-02":
        os._exit(3)
    default_session_function()(job)


def test_a_dead_worker_fails_its_session_not_the_campaign(
        cluster: str, tmp_path: Path, runtime: Runtime, make_experiment: Any) -> None:
    path = experiment(make_experiment, tmp_path / "exp", "ray-dying")
    outcome = run_experiment(runtime, path, runs_root=tmp_path / "runs", flavours=["stack"],
                             backend="ray", session_function=dying)
    rows = {r["item"]: r for r in
            json.loads((outcome.run.path / "sessions.json").read_text())["sessions"]}
    assert rows["a-01"]["status"] == "ok"
    assert rows["a-02"]["status"] == "failed"
    assert rows["a-02"]["error"].startswith(WORKER_LOST)
    transcript = json.loads((outcome.run.path / rows["a-02"]["folder"] / "transcript.json")
                            .read_text())
    assert transcript["error"].startswith(WORKER_LOST)
    assert outcome.records["run_sessions"].status == "ok"


def failing_once(marks: Path, die: bool, job: SessionJob) -> None:
    """The kernel session, except that the first attempt at item a-02 fails: its process
    dies on the spot (``die``: a Ray worker) or it raises. ``marks`` remembers the attempt
    across worker processes (they share this machine's /tmp)."""
    mark = marks / job.session_id
    if job.item.id == "a-02" and not mark.exists():
        mark.write_text("")
        if die:
            os._exit(3)
        raise RuntimeError("the first attempt fails")
    default_session_function()(job)


def test_hostile2_item11_ray_repeats_the_local_results_also_after_a_retry(
        cluster: str, tmp_path: Path, runtime: Runtime, make_experiment: Any) -> None:
    """Issue 26 item 11 on the Ray backend: a Ray run gives the local run's folder, and a
    Ray run whose worker was killed, resumed, gives what a local run whose session failed,
    resumed, gives. With the default judge (votes concurrent) and no provider cache
    forgotten between runs: each vote is a conversation of its own and each session's
    engine its own provider conversation, so none depends on what ran before or beside."""
    import functools

    path = experiment(make_experiment, tmp_path / "exp", "ray-item11", post="")
    flavours = ["summarising"]  # summaries, the identifier check and the judge, 2 sessions

    def run(where: str, backend: str, **more: Any) -> Any:
        return run_experiment(runtime, path, runs_root=tmp_path / where, flavours=flavours,
                              backend=backend, **more)

    local, on_ray = run("local", "local"), run("ray", "ray")
    assert local.ok and on_ray.ok
    assert differences(local.run.path, on_ray.run.path) == []
    retried = {}
    for backend in ("local", "ray"):
        marks = tmp_path / f"marks-{backend}"
        marks.mkdir()
        failed = run(f"retried-{backend}", backend,
                     session_function=functools.partial(failing_once, marks, backend == "ray"))
        rows = json.loads((failed.run.path / "sessions.json").read_text())["sessions"]
        assert [(r["item"], r["status"]) for r in rows] == [("a-01", "ok"), ("a-02", "failed")]
        again = run(f"retried-{backend}", backend)
        assert again.resumed and again.run.path == failed.run.path and again.ok
        retried[backend] = again.run.path
    assert rows[1]["error"].startswith(WORKER_LOST)
    assert differences(retried["local"], retried["ray"]) == []
    # Against the uninterrupted run, only the eval step's account of its last invocation
    # differs (it judged a-02; a-01 was judged by the first): results, claims and every
    # session's files and scores are the same.
    for name in ("results.json", "results.txt", *(str(p.relative_to(local.run.path)) for p in
                                                 local.run.path.glob("sessions/*/*/*/*.json"))):
        assert (local.run.path / name).read_bytes() == (retried["ray"] / name).read_bytes(), name
    assert [d.split(":")[0] for d in differences(local.run.path, retried["ray"])] == [
        "eval/eval_mce.json", "pipeline.json"]


INFRA = """\
apiVersion: mas/v1
kind: Infra
metadata: {{name: cached}}
spec:
  cache: {{enabled: true, path: {path}}}
"""


def test_the_response_cache_is_the_drivers_and_keeps_results_identical(
        cluster: str, tmp_path: Path, runtime: Runtime, make_experiment: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlite3

    path = experiment(make_experiment, tmp_path / "exp", "ray-cache")
    # A relative path, as Infra files usually have it: the driver's working folder decides.
    # A worker opening it itself would find another (empty) file and miss.
    monkeypatch.chdir(tmp_path)
    cache = tmp_path / "driver" / "cache.sqlite"
    (path.parent / "infra.yaml").write_text(INFRA.format(path="driver/cache.sqlite"))
    path.write_text(path.read_text().replace(
        "    - manifest: ./agent.yaml\n", "    - manifest: ./agent.yaml\n    - manifest: ./infra.yaml\n"))

    def run(backend: str) -> Path:
        cold_provider()
        return run_experiment(runtime, path, runs_root=tmp_path / backend, new=True,
                              flavours=["stack"], backend=backend).run.path

    run("local")  # fills the cache
    stored = sqlite3.connect(cache).execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    assert stored > 0
    warm_local, warm_ray = run("local"), run("ray")
    # The workers asked the driver's file: nothing was added, every call was a hit.
    assert sqlite3.connect(cache).execute("SELECT COUNT(*) FROM responses").fetchone()[0] == stored
    events = (warm_ray / "sessions" / "stack" / "a-01" / "run-0" / "events.jsonl").read_text()
    calls = [json.loads(line) for line in events.splitlines() if '"llm.call"' in line]
    assert calls and all(call["cache_hit"] for call in calls)
    assert differences(warm_local, warm_ray) == []


DRIVER = """\
import sys, time
from pathlib import Path
from mas.library.lab import run_experiment
from mas.library.lab.sessions import default_session_function
from mas.runtime import Runtime

def slow(job):
    time.sleep(1)  # one at a time: the test kills this driver while the second one plays
    default_session_function()(job)

run_experiment(Runtime.create(), Path(sys.argv[1]), runs_root=Path(sys.argv[2]), backend="ray",
               address=sys.argv[3], session_function=slow, flavours=["stack"], max_concurrency=1)
"""


@contextmanager
def killed_after_one_session(script: Path, path: Path, runs: Path,
                             address: str) -> Iterator[subprocess.Popen[bytes]]:
    """Run :data:`DRIVER` on ``address`` until one session has landed under ``runs``, then
    (after the ``with`` body) SIGKILL it."""
    script.write_text(DRIVER)
    driver = subprocess.Popen([sys.executable, str(script), str(path), str(runs), address],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        while not list(runs.glob("*/*/sessions/*/*/*/transcript.json")):
            assert driver.poll() is None, "the driver ended before it could be killed"
            assert time.monotonic() < deadline, "no session finished in 90 s"
            time.sleep(0.1)
        yield driver
    finally:
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait()


def test_a_killed_driver_resumes_to_the_same_results(
        cluster: str, tmp_path: Path, runtime: Runtime, make_experiment: Any) -> None:
    path = experiment(make_experiment, tmp_path / "exp", "ray-resume", post=JUDGE)
    cold_provider()
    local = run_experiment(runtime, path, runs_root=tmp_path / "local",
                           flavours=["stack"]).run.path
    runs = tmp_path / "runs"
    with killed_after_one_session(tmp_path / "driver.py", path, runs, cluster):
        pass
    run = next(runs.glob("*/*/run.json")).parent
    landed = len(list(run.glob("sessions/*/*/*/transcript.json")))
    assert landed == 1 and not (run / "sessions.json").exists()
    cold_provider()
    resumed = run_experiment(runtime, path, runs_root=runs, backend="ray", flavours=["stack"])
    assert resumed.resumed and resumed.run.path == run and resumed.ok
    rows = json.loads((run / "sessions.json").read_text())["sessions"]
    assert [r["status"] for r in rows] == ["ok"] * 2
    assert differences(local, run) == []


def _ray_processes() -> dict[int, str]:
    """Every running process of any local Ray instance (a head process naming its session,
    an agent or worker titled ``ray::``), with its command line."""
    found = {}
    for entry in Path("/proc").iterdir():
        try:
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if state != "Z" and ("--session-name=" in line or line.startswith("ray::")):
            found[int(entry.name)] = line
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="the reaper reads /proc")
def test_a_killed_driver_leaves_no_ray_instance_it_started(
        cluster: str, tmp_path: Path, make_experiment: Any) -> None:
    # "local": the driver starts its own instance beside the module's; SIGKILL runs none of
    # its code, and the kernel ends only Ray's GCS and raylet, not the raylet's agents.
    path = experiment(make_experiment, tmp_path / "exp", "ray-reaped", post=JUDGE)
    with killed_after_one_session(tmp_path / "driver.py", path, tmp_path / "runs",
                                  "local") as driver:
        # Its own instance only: Ray processes below the driver, not those another test
        # (or another suite on this machine) starts meanwhile.
        started = set(_ray_processes()) & below({driver.pid}, process_table())
        assert started, "the driver started no Ray instance of its own"
    deadline = time.monotonic() + 60  # a bound on a failure, not a timing assertion
    while set(_ray_processes()) & started and time.monotonic() < deadline:
        time.sleep(0.1)
    left = _ray_processes()
    assert [left[pid] for pid in started if pid in left] == []
    check_cluster(ray, cpus=1)  # the module's own instance is untouched


def test_a_plugin_missing_on_the_cluster_is_named_before_any_session(cluster: str) -> None:
    here = plugin_inventory()
    assert {"standard", "eval", "lab"} <= set(here)
    check_cluster(ray, here)  # the local head has everything the driver has
    # A driver with one plugin more, and one at another version, than the cluster's nodes:
    name, dist = next((n, d) for n, d in sorted(here.items()) if d != "built in")
    wanted = {**here, "driver_only": "mas-driver-only 0.1", name: dist + ".post1"}
    with pytest.raises(MasError) as caught:
        check_cluster(ray, wanted)
    message = str(caught.value)
    assert "plugin 'driver_only' (mas-driver-only 0.1) is not installed" in message
    assert f"plugin {name!r} is {dist}, the driver has {dist}.post1" in message
    assert "Install the same distributions and plugins on every node" in message
    with pytest.raises(MasError, match="4 CPUs per session, but the largest node of the Ray "
                                       "cluster has 2; lower it"):
        check_cluster(ray, here, cpus=4)


def test_a_plugin_disabled_on_a_node_is_missing_from_its_answer(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A node whose Ray processes start with MAS_DISABLE_PLUGINS does not load that plugin:
    # the start check must hear it as missing, not as present.
    from mas.library.lab.executors._ray_worker import worker_runtime

    here = plugin_inventory()
    assert "keyword_summarizer" in here  # a fixture plugin of `make test`
    monkeypatch.setenv("MAS_DISABLE_PLUGINS", "keyword_summarizer")
    worker_runtime.cache_clear()
    try:
        assert plugin_inventory() == {n: d for n, d in here.items() if n != "keyword_summarizer"}
    finally:
        monkeypatch.delenv("MAS_DISABLE_PLUGINS")
        worker_runtime.cache_clear()


def stamped(folder: Path, job: SessionJob) -> None:
    """A no-op session that leaves its start and end wall times in ``folder`` (workers and
    driver share this machine's clock and /tmp)."""
    started = time.time()
    time.sleep(0.3)
    (job.folder / "transcript.json").write_text(json.dumps(
        {"session_id": job.session_id, "messages": [], "final_answer": "", "error": None}))
    (folder / job.session_id).write_text(f"{started} {time.time()}")


def test_max_concurrency_bounds_the_sessions_in_flight_on_ray(
        cluster: str, tmp_path: Path, runtime: Runtime, make_experiment: Any) -> None:
    import functools

    path = experiment(make_experiment, tmp_path / "exp", "ray-one-at-a-time", post=JUDGE)
    stamps = tmp_path / "stamps"
    stamps.mkdir()
    # The cluster has 2 CPUs, so only the driver's bound keeps a second session waiting.
    outcome = run_experiment(runtime, path, runs_root=tmp_path / "runs", backend="ray",
                             max_concurrency=1, session_function=functools.partial(stamped, stamps))
    assert outcome.records["run_sessions"].status == "ok"
    spans = sorted(tuple(map(float, p.read_text().split())) for p in stamps.iterdir())
    assert len(spans) == 6
    assert all(end <= start for (_, end), (start, _) in itertools.pairwise(spans)), spans


DEGRADING_INFRA = """\
apiVersion: mas/v1
kind: Infra
metadata: {{name: closed}}
spec:
  generation: {{api_base: "{base}", timeout: 5, num_retries: 0}}
"""


def test_degraded_sessions_are_accounted_on_ray_as_locally(
        cluster: str, tmp_path: Path, make_experiment: Any, mas_ctl: Any) -> None:
    from mas.runtime.degradation import EXIT_DEGRADED
    from mas.runtime.fakeprovider import closed_base_url

    path = experiment(make_experiment, tmp_path / "exp", "ray-degraded")
    # The summarizer's provider refuses every call: each compaction fails, the session goes on.
    overlay = path.parent / "overlays" / "summarising.yaml"
    overlay.write_text(overlay.read_text().replace(
        "keep_turns: 2}", "keep_turns: 2, summarizer: {type: llm, params: {model: openai/local}}}"))
    (path.parent / "infra.yaml").write_text(DEGRADING_INFRA.format(base=closed_base_url()))
    path.write_text(path.read_text().replace(
        "    - manifest: ./agent.yaml\n", "    - manifest: ./agent.yaml\n    - manifest: ./infra.yaml\n"))

    def run(backend: str, *more: str) -> Any:
        cold_provider()
        return mas_ctl("lab", "run", path, "--flavour", "summarising", "--flavour", "stack",
                       "--backend", backend, "--runs-dir", tmp_path / backend, *more)

    local, on_ray = run("local"), run("ray")
    for result in (local, on_ray):
        assert result.code == EXIT_DEGRADED, result.err
        line = next(x for x in result.err.splitlines() if x.startswith("degraded: flavour"))
        assert "'summarising': 2 of 2 session(s)" in line and "compaction_failures" in line
    assert "sessions: 4 run in" in on_ray.err and "2 degraded" in on_ray.err
    def table(out: str) -> list[str]:  # the report line names each run's own folder
        return [line for line in out.splitlines() if not line.startswith("report: ")]

    assert table(on_ray.out) == table(local.out)  # the same table, degraded rows and claims
    local_run, ray_run = (next((tmp_path / b).glob("*/*")) for b in ("local", "ray"))
    assert json.loads((ray_run / "sessions.json").read_text())["degraded"] == 2
    assert differences(local_run, ray_run) == []
    # As locally, a rerun plays the degraded sessions again, and --allow-degraded accepts them.
    again = run("ray", "--allow-degraded")
    assert again.code == 0 and "2 degraded" in again.err, again.err
    rows = json.loads((ray_run / "sessions.json").read_text())["sessions"]
    assert [r["seconds"] is not None for r in rows if r["flavour"] == "summarising"] == [True] * 2


def test_a_cluster_that_cannot_run_the_sessions_fails_the_step_before_any_session(
        cluster: str, tmp_path: Path, make_experiment: Any, mas_ctl: Any) -> None:
    # The plugin check and the CPU check run when the sessions step joins the cluster:
    # what the command prints and exits with (docs/lab.md, "What a node needs").
    path = make_experiment(tmp_path / "exp", extra="  runner: {backend: ray, "
                                                   "num_cpus_per_session: 4}\n")
    result = mas_ctl("lab", "run", path, "--runs-dir", tmp_path / "runs")
    assert result.code == 1 and "Traceback" not in result.err
    assert (" failed  run_sessions: MasError: num_cpus_per_session: 4 CPUs per session, but "
            "the largest node of the Ray cluster has 2; lower it") in result.err
    assert "error: step(s) did not finish: run_sessions (failed)" in result.err
    assert not list((tmp_path / "runs").glob("*/*/sessions/*/*/*/transcript.json"))


def test_bad_runner_input_is_one_line_and_exit_2(tmp_path: Path, make_experiment: Any,
                                                  mas_ctl: Any) -> None:
    path = make_experiment(tmp_path / "exp")
    bad = mas_ctl("lab", "run", path, "--backend", "spark")
    assert bad.code == 2 and "'spark' is not one of 'local', 'ray'" in bad.err
    lonely = mas_ctl("lab", "run", path, "--address", "auto", "--runs-dir", tmp_path / "runs")
    assert lonely.code == 2 and "Traceback" not in lonely.err
    assert "--address: only the ray backend joins a cluster" in lonely.err
    path.write_text(path.read_text() + "  runner: {backend: ray, num_cpus_per_session: 0}\n")
    zero = mas_ctl("lab", "run", path, "--runs-dir", tmp_path / "runs")
    assert zero.code == 2 and "Traceback" not in zero.err
    assert "experiment.runner.num_cpus_per_session" in zero.err and "(got 0)" in zero.err
    assert not (tmp_path / "runs").exists()


def test_an_address_nobody_answers_is_one_line_not_a_hang(
        tmp_path: Path, make_experiment: Any, mas_ctl: Any) -> None:
    import socket

    with socket.socket() as probe:  # a free port: bound, never listened on, then closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    path = make_experiment(tmp_path / "exp")
    started = time.monotonic()
    dead = mas_ctl("lab", "run", path, "--backend", "ray", "--address", f"127.0.0.1:{port}",
                   "--runs-dir", tmp_path / "runs")
    assert time.monotonic() - started < 30
    assert dead.code == 2 and "Traceback" not in dead.err
    assert f"--address: no Ray cluster answers there (Connection refused) (got '127.0.0.1:{port}')" \
        in dead.err
    assert not (tmp_path / "runs").exists()  # refused before a run folder was made
    garbled = mas_ctl("lab", "run", path, "--backend", "ray", "--address", "head-node")
    assert garbled.code == 2 and "--address: expected auto, host:port or ray://host:port" \
        in garbled.err


def test_the_command_line_wins_over_the_experiment_file(
        tmp_path: Path, runtime: Runtime, make_experiment: Any, cluster: str) -> None:
    from mas.library.lab.experiment import load_lab_experiment
    from mas.library.lab.lab import runner_settings

    path = make_experiment(tmp_path / "exp", extra="  runner: {backend: ray, address: auto, "
                                                   "num_cpus_per_session: 0.5}\n")
    loaded = load_lab_experiment(runtime, path)
    assert runner_settings(loaded, path).model_dump() == {
        "backend": "ray", "address": "auto", "num_cpus_per_session": 0.5}
    # The override is probed before a run folder is made: give it the live local head.
    assert runner_settings(loaded, path, address=cluster).address == cluster
    local = runner_settings(loaded, path, backend="local")
    assert local.backend == "local" and local.address is None


def test_without_ray_the_error_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(MasError, match=r"pip install 'mas-library-lab\[ray\]'"):
        import_ray()


def test_importing_the_lab_does_not_import_ray() -> None:
    code = ("import sys, mas.library.lab, mas.library.lab.runner, mas.library.lab.executors, "
            "mas.library.lab.cli; print('ray' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
