"""Render the lab report of the context-ablation example to ``docs/img/lab-report.png``.

Runs (or resumes) the example experiment into ``runs/`` with the workspace's ``mas-ctl``,
then takes one full-width screenshot of its ``report.html`` with headless Chromium:

    .venv/bin/python docs/screenshot_report.py [--runs-dir runs] [--out docs/img/lab-report.png]

Exits 2 when chromium is not installed (Debian: ``apt-get install chromium``), and with
``mas-ctl``'s own code when the experiment does not run.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXPERIMENT = ROOT / "library-lab" / "examples" / "context-ablation" / "experiment.yaml"
WIDTH, HEIGHT = 1400, 2600
"""The window the report is drawn in: wide enough for the table, tall enough for the result,
the table and the claims."""


def latest_report(runs_dir: Path) -> Path | None:
    """The newest ``report.html`` of the example under ``runs_dir``."""
    found = sorted((runs_dir / "context-ablation").glob("*/report.html"))
    return found[-1] if found else None


def screenshot(page: Path, out: Path, chromium: str) -> None:
    """One PNG of ``page`` in a ``WIDTH`` × ``HEIGHT`` window, taken offline."""
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--hide-scrollbars",
         f"--window-size={WIDTH},{HEIGHT}", f"--screenshot={out}", page.as_uri()],
        check=True, capture_output=True, timeout=120)


def main(argv: list[str] | None = None) -> int:
    """Run the example, then write the screenshot; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs-dir", type=Path, default=ROOT / "runs")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img" / "lab-report.png")
    args = parser.parse_args(argv)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("chromium: not installed (Debian: apt-get install chromium)", file=sys.stderr)
        return 2
    mas_ctl = Path(sys.executable).with_name("mas-ctl")
    done = subprocess.run([str(mas_ctl), "lab", "run", str(EXPERIMENT), "--runs-dir",
                           str(args.runs_dir), "--allow-degraded"], check=False,
                          stdout=subprocess.DEVNULL)
    page = latest_report(args.runs_dir)
    if done.returncode != 0 or page is None:
        print(f"mas-ctl lab run: exit {done.returncode}, no report.html", file=sys.stderr)
        return done.returncode or 1
    screenshot(page, args.out, chromium)
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
