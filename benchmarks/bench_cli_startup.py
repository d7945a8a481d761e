"""Wall time of ``mas-ctl compile``, ``validate``, ``plugins`` and ``--help`` (target ≤ 0.5 s).

Each command runs as a fresh process, as a user runs it; the figure is the median of
several runs, next to the time of importing litellm alone (what the CLI avoids).

Run: ``.venv/bin/python benchmarks/bench_cli_startup.py``
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "library-standard" / "examples" / "agent" / "agent.yaml"
MAS_CTL = str(Path(sys.executable).with_name("mas-ctl"))
COMMANDS = {
    "compile": [MAS_CTL, "compile", str(EXAMPLE)],
    "validate": [MAS_CTL, "validate", str(EXAMPLE)],
    "plugins": [MAS_CTL, "plugins"],
    "--help": [MAS_CTL, "--help"],
    "import litellm": [
        sys.executable,
        "-c",
        "import os; os.environ['LITELLM_LOCAL_MODEL_COST_MAP'] = 'True'; import litellm",
    ],
}


def median_seconds(command: list[str], runs: int) -> float:
    """Median wall time of ``runs`` fresh processes of ``command``."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, cwd=ROOT)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main(runs: int = 7) -> dict[str, float]:
    """Measure every command; print a table; return the medians."""
    results = {
        name: median_seconds(command, 3 if name == "import litellm" else runs)
        for name, command in COMMANDS.items()
    }
    litellm = results["import litellm"]
    print(f"{'command':<16}{'median s':>10}{'vs litellm import':>20}")
    for name, seconds in results.items():
        print(f"{name:<16}{seconds:>10.3f}{seconds / litellm:>19.2f}x")
    return results


if __name__ == "__main__":
    main()
