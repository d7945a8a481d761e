"""``python -m benchmarks``: run every figure of issue 7 and rewrite benchmarks/RESULTS.md.

``--quick`` shrinks every session (a smoke run; RESULTS.md is then not written unless
``--out`` names a file).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
from importlib import metadata
from pathlib import Path

from benchmarks import figures
from benchmarks.report import render

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


def main(argv: list[str] | None = None) -> int:
    """Run the figures, print each as it lands, write the results file."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument("--quick", action="store_true", help="small sessions (smoke run)")
    parser.add_argument("--out", type=Path, default=None, help="results file to write")
    args = parser.parse_args(argv)
    q = args.quick
    started = time.perf_counter()
    correctness, scores = figures.correctness(60 if q else 500)
    done = [correctness]
    print(render([correctness]), flush=True)
    steps = [
        lambda: figures.steady_state(5 if q else 25),
        lambda: figures.whole_session(100 if q else 1_000),
        lambda: figures.summarizer_cost(scores, 60 if q else 500),
        lambda: figures.accounting(scores, 60 if q else 500),
        lambda: figures.identifier_survival(60 if q else 500),
        lambda: figures.per_turn_cost(50 if q else 2_000),
        lambda: figures.prefix_cache(20 if q else 120),
        figures.cli_startup,
        figures.estimate_accuracy,
        lambda: figures.memory(1_000 if q else 10_000),
        figures.lab_ray,
    ]
    for step in steps:
        fig = step()
        done.append(fig)
        print(render([fig]), flush=True)
    elapsed = time.perf_counter() - started
    out = args.out or (None if q else HERE / "RESULTS.md")
    if out is not None:
        header = {
            "command": "make bench  (= .venv-bench/bin/python -m benchmarks)"
            + ("  --quick" if q else ""),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": f"{os.cpu_count()} cores ({platform.machine()}), "
                       f"Python {platform.python_version()}, {platform.system()}",
            "duration": f"{elapsed:.0f} s",
        }
        out.write_text(render(done, header=header, versions=versions()))
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
