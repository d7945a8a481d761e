"""``python -m benchmarks``: run every figure (issues 7, 17, 22) and rewrite benchmarks/RESULTS.md.

``--quick`` shrinks every session (a smoke run; RESULTS.md is then not written unless
``--out`` names a file). ``--only NAME`` (repeatable) runs just those figures and
replaces only their sections (and their rows of the targets table) in the results file.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from benchmarks import figures, regime
from benchmarks.harness import Score
from benchmarks.report import render, splice

HERE = Path(__file__).resolve().parent
PACKAGES = ("mas-runtime", "mas-library-standard", "litellm", "langchain-core", "langchain",
            "langmem", "autogen-core", "pydantic", "ray")


def versions() -> dict[str, str]:
    """Installed version of every package the figures touch ('not installed' if absent)."""
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


Step = Callable[[], list[figures.Figure]]


def steps(quick: bool) -> dict[str, Step]:
    """Every figure's step by name, in report order (``--only`` picks among them).

    summarizer_cost and accounting read the correctness run's scores: picked alone, they
    run correctness first (and report it too).
    """
    q = quick
    scores: dict[str, Score] = {}

    def correctness() -> list[figures.Figure]:
        fig, got = figures.correctness(60 if q else 500)
        scores.update(got)
        return [fig]

    def after_correctness(make: Callable[[dict[str, Score]], figures.Figure]) -> Step:
        return lambda: [*(correctness() if not scores else []), make(scores)]

    return {
        "correctness": correctness,
        "steady_state": lambda: [figures.steady_state(5 if q else 25)],
        "whole_session": lambda: [figures.whole_session(100 if q else 1_000)],
        "summarizer_cost": after_correctness(
            lambda s: figures.summarizer_cost(s, 60 if q else 500)),
        "accounting": after_correctness(lambda s: figures.accounting(s, 60 if q else 500)),
        "identifier_survival": lambda: [figures.identifier_survival(60 if q else 500)],
        "per_turn_cost": lambda: [figures.per_turn_cost(50 if q else 2_000)],
        "regime": lambda: regime.regime(quick=q),
        "prefix_cache": lambda: [figures.prefix_cache(20 if q else 120)],
        "cli_startup": lambda: [figures.cli_startup()],
        "estimate_accuracy": lambda: [figures.estimate_accuracy()],
        "memory": lambda: [figures.memory(1_000 if q else 10_000)],
        "lab_ray": lambda: [figures.lab_ray()],
    }


def main(argv: list[str] | None = None) -> int:
    """Run the figures, print each as it lands, write the results file."""
    names = list(steps(False))
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument("--quick", action="store_true", help="small sessions (smoke run)")
    parser.add_argument("--out", type=Path, default=None, help="results file to write")
    parser.add_argument("--only", action="append", choices=names, metavar="NAME",
                        help="run only this figure (repeatable): " + ", ".join(names))
    args = parser.parse_args(argv)
    q = args.quick
    load = os.getloadavg()[0]  # 2 shared cores: say how busy they were when it began
    started = time.perf_counter()
    done: list[figures.Figure] = []
    for name, step in steps(q).items():
        if args.only and name not in args.only:
            continue
        figs = step()
        done += figs
        print(render(figs), flush=True)
    elapsed = time.perf_counter() - started
    out = args.out or (None if q else HERE / "RESULTS.md")
    if out is None:
        return 0
    command = "make bench  (= .venv-bench/bin/python -m benchmarks)"
    if args.only:
        command = ".venv-bench/bin/python -m benchmarks " + " ".join(
            f"--only {name}" for name in args.only)
    command += "  --quick" if q else ""
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    machine = (f"{os.cpu_count()} cores ({platform.machine()}), "
               f"Python {platform.python_version()}, {platform.system()}, "
               f"load average {load:.1f} at the start")
    if args.only and out.exists():
        for fig in done:
            fig.notes.append(f"Measured apart from the rest of this file: `{command}`, {when}, "
                             f"{machine}, {elapsed:.0f} s.")
        out.write_text(splice(out.read_text(), done))
    else:
        header = {"command": command, "date": when, "machine": machine,
                  "duration": f"{elapsed:.0f} s"}
        out.write_text(render(done, header=header, versions=versions()))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
