"""Render the docs' screenshots with headless chromium: ``make screenshots``.

Each entry of :data:`SHOTS` names a PNG under ``docs/img/``, the function that writes the
HTML page to photograph (from the repository root, offline), and the window size. To add
a screenshot, add an entry; :func:`screenshot` is the one place chromium is called.

    python docs/screenshots.py            # every shot
    python docs/screenshots.py timeline   # only docs/img/timeline.png
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMG = ROOT / "docs" / "img"
AGENT = ROOT / "library-standard" / "examples" / "agent"
DEMO_SESSION = ROOT / "runs" / "demo-session"
"""Where ``make demo`` runs the example session; running it again resumes at once."""
EXPERIMENT = ROOT / "library-lab" / "examples" / "context-ablation" / "experiment.yaml"
"""The demo's lab experiment (``make demo`` runs it into ``runs/``; it resumes at once)."""

CHROMIUM_FLAGS = (
    "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-quic", "--allow-file-access-from-files", "--hide-scrollbars",
    "--virtual-time-budget=5000",
)
"""No background connections: on a closed network each is a refused one to wait for."""


def chromium() -> str:
    """The chromium binary on ``PATH``.

    :raises SystemExit: none is installed (``make browser`` installs it as root).
    """
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise SystemExit("error: chromium is not installed (Debian: apt-get install chromium)")
    return found


def screenshot(page: Path, png: Path, size: tuple[int, int], profile: Path) -> Path:
    """Photograph ``page`` in a headless window of ``size`` (width, height) into ``png``.

    :param profile: a scratch folder for chromium's profile.
    :raises RuntimeError: chromium failed or wrote no file.
    """
    png.parent.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
         f"--window-size={size[0]},{size[1]}", f"--screenshot={png}", page.as_uri()],
        capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0 or not png.is_file():
        raise RuntimeError(f"chromium could not photograph {page}: {done.stderr[-500:]}")
    return png


def demo_timeline() -> Path:
    """The demo session's timeline page (the session is run first, as ``make demo`` does)."""
    mas_ctl = Path(sys.executable).parent / "mas-ctl"
    subprocess.run([str(mas_ctl), "run", str(AGENT / "agent.yaml"), "--input",
                    str(AGENT / "turns.jsonl"), "--out", str(DEMO_SESSION)],
                   check=True, stdout=subprocess.DEVNULL)
    from mas.runtime.timeline import write_timeline

    return write_timeline(DEMO_SESSION)


def demo_report() -> Path:
    """The demo lab's ``report.html`` (the experiment is run, or resumed, first).

    :raises RuntimeError: the lab did not run or wrote no report.
    """
    mas_ctl = Path(sys.executable).parent / "mas-ctl"
    runs = ROOT / "runs"
    done = subprocess.run([str(mas_ctl), "lab", "run", str(EXPERIMENT), "--runs-dir", str(runs),
                           "--allow-degraded"], check=False, stdout=subprocess.DEVNULL)
    found = sorted((runs / "context-ablation").glob("*/report.html"))
    if done.returncode != 0 or not found:
        raise RuntimeError(f"mas-ctl lab run: exit {done.returncode}, no report.html")
    return found[-1]


SHOTS: dict[str, tuple[Callable[[], Path], tuple[int, int]]] = {
    "timeline": (demo_timeline, (1280, 1000)),
    "lab-report": (demo_report, (1400, 2600)),
}
"""Shot name (``docs/img/<name>.png``) → the page's writer and the window size."""


def main(argv: Sequence[str]) -> int:
    """Render the shots named in ``argv`` (all of them when none is); print each path."""
    names = list(argv) or list(SHOTS)
    unknown = [name for name in names if name not in SHOTS]
    if unknown:
        print(f"error: no shot {unknown[0]!r}; there are: {', '.join(SHOTS)}", file=sys.stderr)
        return 2
    if shutil.which("chromium") is None and shutil.which("chromium-browser") is None:
        print("error: chromium is not installed (Debian: apt-get install chromium)",
              file=sys.stderr)
        return 2
    profile = ROOT / "runs" / ".screenshots-profile"
    try:
        for name in names:
            make, size = SHOTS[name]
            print(screenshot(make(), IMG / f"{name}.png", size, profile).relative_to(ROOT))
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
