"""Lab sessions per second, local thread pool vs Ray tasks, and the cost of one Ray task.

Both backends run the same grid through the same driver (``run_grid``) at the same
``max_concurrency`` (2, this machine's cores), Ray on a local head started here with 2 CPUs:

- *sessions*: the context-ablation example's first 3 items x every flavour (scripted
  sessions of 30-120 turns on the offline model), each backend once to warm up (Ray
  starts its workers and imports litellm there), then timed;
- *overhead*: the first 6 items x every flavour as no-op sessions (the session function
  only writes a transcript), so the time per session is what the backend itself costs:
  for Ray, shipping the job, rebuilding the flavour on the worker, the scratch folder,
  returning the files and the driver writing them.

Run: ``.venv/bin/python benchmarks/bench_lab_ray.py``
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mas.library.lab.experiment import load_lab_experiment
from mas.library.lab.rundir import RunFolder
from mas.library.lab.runner import plan_jobs, run_grid
from mas.library.lab.sessions import SessionJob, default_session_function
from mas.runtime import Runtime
from mas.runtime.spec.experiment import Runner

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENT = ROOT / "library-lab" / "examples" / "context-ablation" / "experiment.yaml"
CONCURRENCY = 2


def noop_session(job: SessionJob) -> None:
    """A session that only writes its transcript: what is left is the backend's own cost."""
    (job.folder / "transcript.json").write_text(json.dumps(
        {"session_id": job.session_id, "messages": [], "final_answer": "", "error": None}))


@dataclass
class Timing:
    """Wall time of one grid pass."""

    backend: str
    sessions: int
    seconds: float

    @property
    def per_second(self) -> float:
        """Sessions finished per second."""
        return self.sessions / self.seconds

    @property
    def per_session_ms(self) -> float:
        """Milliseconds of wall time per session (at the pass's concurrency)."""
        return 1000 * self.seconds / self.sessions


def _pass(runtime: Runtime, backend: str, session: Any, limit: int, scratch: Path,
          label: str) -> Timing:
    experiment = load_lab_experiment(runtime, EXPERIMENT, limit=limit)
    jobs = plan_jobs(experiment, RunFolder(scratch / label), runtime)
    started = time.perf_counter()
    records = run_grid(jobs, session, max_concurrency=CONCURRENCY,
                       runner=Runner.model_validate({"backend": backend}))
    seconds = time.perf_counter() - started
    failed = [r.error for r in records if r.status != "ok"]
    assert not failed, failed
    return Timing(backend, len(records), seconds)


def main() -> dict[str, Timing]:
    """Time both backends on real and no-op sessions; print and return the timings."""
    import ray

    runtime = Runtime.create()
    ray.init(address="local", num_cpus=CONCURRENCY, include_dashboard=False, logging_level="ERROR",
             log_to_driver=False)
    results: dict[str, Timing] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="mas-bench-ray-") as tmp:
            scratch = Path(tmp)
            for backend in ("local", "ray"):
                _pass(runtime, backend, default_session_function(), 3, scratch, f"warm-{backend}")
                results[f"sessions {backend}"] = _pass(
                    runtime, backend, default_session_function(), 3, scratch, f"run-{backend}")
                results[f"no-op {backend}"] = _pass(runtime, backend, noop_session, 6, scratch,
                                                    f"noop-{backend}")
    finally:
        ray.shutdown()
    print(f"{'pass':<16}{'sessions':>9}{'seconds':>9}{'per s':>8}{'ms each':>9}")
    for name, timing in results.items():
        print(f"{name:<16}{timing.sessions:>9}{timing.seconds:>9.2f}{timing.per_second:>8.2f}"
              f"{timing.per_session_ms:>9.1f}")
    return results


def in_loopback_namespace() -> dict[str, Timing]:
    """:func:`main` in a network namespace with loopback only (Ray binds the host's own
    address; there it is 127.0.0.1), its timings read back from the JSON it prints."""
    from mas.runtime.testing import run_in_loopback_namespace

    done = run_in_loopback_namespace(
        [sys.executable, "-m", "benchmarks.bench_lab_ray", "--json"], timeout=1800,
        cwd=str(Path(__file__).resolve().parents[1]),
    )
    if done.returncode != 0:
        raise RuntimeError(f"bench_lab_ray failed: {done.stderr[-2000:]}")
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    return {name: Timing(**row) for name, row in rows.items()}


if __name__ == "__main__":
    timings = main()
    if "--json" in sys.argv:
        print(json.dumps({name: asdict(t) for name, t in timings.items()}))
