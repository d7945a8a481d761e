"""report.html in a real headless browser (Debian's chromium): it loads, every plot renders
with its series, every link resolves, and the page logs nothing to the console.

Skipped, with the reason, where chromium is not installed (``apt-get install chromium``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mas.library.lab import run_experiment
from mas.library.lab.steps import report as report_step
from mas.runtime import Runtime

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed "
                                "(Debian: apt-get install chromium)")

# The page is opened in an iframe of a probe page, which measures every SVG once the report
# has loaded and writes what it found into its own DOM (chromium --dump-dom prints it).
PROBE = """<!DOCTYPE html><html><body>
<iframe id="report" src="{src}" width="1200" height="900"></iframe><pre id="out">pending</pre>
<script>
document.getElementById("report").addEventListener("load", function () {{
  var doc = this.contentDocument, rows = [];
  doc.querySelectorAll("svg").forEach(function (svg) {{
    var box = svg.getBBox(), title = svg.querySelector("title");
    rows.push(["svg", title ? title.textContent : "", Math.round(box.width),
               Math.round(box.height), svg.querySelectorAll("g.series").length,
               Math.round(svg.getBoundingClientRect().width)].join("|"));
  }});
  doc.querySelectorAll("a[href]").forEach(function (a) {{
    rows.push(["link", a.getAttribute("href")].join("|"));
  }});
  doc.querySelectorAll("li.finding").forEach(function (li) {{
    rows.push(["finding", li.textContent].join("|"));
  }});
  doc.querySelectorAll("a.timeline").forEach(function (a) {{
    rows.push(["timeline", a.getAttribute("href")].join("|"));
  }});
  rows.push(["title", doc.title].join("|"));
  document.getElementById("out").textContent = rows.join("\\n");
}});
</script></body></html>
"""


def _timeline_page(run_dir: Path, out: Path | None) -> Path:
    """Stands in for the kernel's write_timeline: a small page per session folder."""
    target = out or run_dir / "timeline.html"
    target.write_text(f"<!DOCTYPE html><html><head><title>timeline {run_dir.name}</title></head>"
                      "<body><p>requests</p></body></html>")
    return target


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, runtime: Runtime,
           make_experiment: Any) -> Path:
    root = tmp_path_factory.mktemp("browser")
    post = ("      - type: aggregate\n        config:\n          compare:\n"
            "            - {metric: ProbeRecall, better: summarising, than: sliding_window}\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(report_step, "timeline_writer", lambda: _timeline_page)
        outcome = run_experiment(runtime, make_experiment(root / "exp", post=post),
                                 runs_root=root / "runs")
    assert outcome.ok
    return outcome.run.path / "report.html"


def _browse(report: Path, tmp_path: Path) -> tuple[list[list[str]], str]:
    probe = tmp_path / "probe.html"
    probe.write_text(PROBE.format(src=report.as_uri()))
    assert CHROMIUM is not None
    done = subprocess.run(
        # No background connections: on a closed network each is a refused one to wait for.
        [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-quic",
         f"--user-data-dir={tmp_path / 'profile'}", "--allow-file-access-from-files",
         "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000", "--dump-dom",
         probe.as_uri()], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<pre id="out">(.*?)</pre>', done.stdout, re.DOTALL)
    assert found and found.group(1) != "pending", done.stdout[-2000:]
    rows = [line.split("|") for line in found.group(1).splitlines()]
    return rows, done.stderr


def test_report_loads_every_plot_renders_and_nothing_is_logged(report: Path,
                                                               tmp_path: Path) -> None:
    rows, log = _browse(report, tmp_path)
    assert ["title", "tiny — lab report"] in rows
    svgs = [row for row in rows if row[0] == "svg"]
    plots = sorted((report.parent / "plots").glob("*.svg"))
    assert len(svgs) == len(plots) >= 6  # Pareto, fill, three distributions, summarizer calls
    for _, title, width, height, series, _ in svgs:
        assert int(width) > 300 and int(height) > 150, title  # drawn, not an empty box
        assert int(series) >= 2, title  # a series per flavour
    assert svgs[0][1].startswith("ProbeRecall against prompt tokens")  # the Pareto plot first
    assert all(int(row[5]) > 1000 for row in svgs)  # as wide as the page (1,200 px here)
    findings = [row[1] for row in rows if row[0] == "finding"]
    assert any(f.startswith("ProbeRecall (mid-session) (higher is better):") for f in findings)
    timelines = [row[1] for row in rows if row[0] == "timeline"]
    assert len(timelines) == 6 and all(t.endswith("/timeline.html") for t in timelines)
    # No console output at all: no error, no warning, no stray log line from the page.
    assert [line for line in log.splitlines() if ":CONSOLE" in line] == []


def test_every_link_of_the_report_resolves(report: Path, tmp_path: Path) -> None:
    rows, _ = _browse(report, tmp_path)
    links = [row[1] for row in rows if row[0] == "link"]
    files = [link for link in links if not link.startswith("#")]
    assert any(link.startswith("sessions/") for link in files)
    assert {"results_table.csv", "results_table.json", "results.json"} <= set(files)
    for link in files:
        assert (report.parent / link).exists(), link
    anchors = {link[1:] for link in links if link.startswith("#")}
    html = report.read_text()
    for anchor in anchors:
        assert f"id='{anchor}'" in html, anchor


LONG_CONVERSATIONS = (Path(__file__).resolve().parents[2] / "library-lab" / "examples"
                      / "long-conversations" / "experiment.yaml")


def test_the_locomo_example_report_states_its_result_and_links_real_timelines(
        runtime: Runtime, tmp_path: Path) -> None:
    # Issue 24's "done when": a LoCoMo-format example's report, with the kernel's own
    # timeline pages (not the stand-in above), opens with the result and the Pareto plot.
    outcome = run_experiment(runtime, LONG_CONVERSATIONS, runs_root=tmp_path / "runs")
    assert outcome.ok
    report = outcome.run.path / "report.html"
    rows, log = _browse(report, tmp_path)
    svgs = [row for row in rows if row[0] == "svg"]
    assert svgs and svgs[0][1].startswith("ProbeRecall against prompt tokens")
    findings = [row[1] for row in rows if row[0] == "finding"]
    assert any(f.startswith("EvidenceWithSummary") for f in findings), findings
    timelines = [row[1] for row in rows if row[0] == "timeline"]
    sessions = sorted(outcome.run.path.glob("sessions/*/*/run-*"))
    assert len(timelines) == len(sessions) == 12  # 4 flavours x 3 conversations
    for link in timelines:
        page = report.parent / link
        assert page.is_file() and "<canvas" in page.read_text()
    assert [line for line in log.splitlines() if ":CONSOLE" in line] == []
