"""The timeline page in a real headless browser (Debian's chromium): it loads without a
console line, its three canvases are drawn, hovering shows a request's numbers, its
screenshot has the window's size, the demo session shows its two compactions and its
final accounting, and 10,000 requests draw one column per pixel (render time recorded).

Skipped, with the reason, where chromium is not installed (``apt-get install chromium``).
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import struct
import subprocess
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from mas.runtime.timeline import write_timeline

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed "
                                "(Debian: apt-get install chromium)")


ROOT = Path(__file__).resolve().parents[2]


def _screenshots_script() -> ModuleType:
    # docs/screenshots.py (`make screenshots`) is a script, not a package: loaded by path,
    # so the test photographs the page exactly as the docs' screenshots are taken.
    path = ROOT / "docs" / "screenshots.py"
    spec = importlib.util.spec_from_file_location("docs_screenshots", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SCRIPT = _screenshots_script()

# The page loads in an iframe of a probe page, which reads what was drawn, hovers over the
# middle of the plot, and writes its findings into its own DOM (--dump-dom prints it).
PROBE = """<!DOCTYPE html><html><body>
<iframe id="page" src="{src}" width="1200" height="900"></iframe><pre id="out">pending</pre>
<script>
document.getElementById("page").addEventListener("load", function () {{
  var doc = this.contentDocument, rows = [], root = doc.documentElement;
  doc.querySelectorAll("canvas").forEach(function (c) {{
    var ctx = c.getContext("2d"), w = c.width, h = c.height, inked = 0;
    var px = ctx.getImageData(0, 0, w, h).data;
    for (var i = 3; i < px.length; i += 4 * 7) {{ if (px[i]) {{ inked++; }} }}
    rows.push(["canvas", c.id, w, h, inked].join("|"));
  }});
  rows.push(["render", root.dataset.renderMs, root.dataset.columns, root.dataset.totalMs]
    .join("|"));
  rows.push(["cards", doc.querySelectorAll("#summary div").length].join("|"));
  rows.push(["compactions", doc.querySelectorAll("#compactions tr").length - 1].join("|"));
  doc.querySelectorAll("#compactions tr").forEach(function (tr) {{
    rows.push(["compaction"].concat([].map.call(tr.children, function (td) {{
      return td.textContent; }})).join("|"));
  }});
  doc.querySelectorAll("#summary div").forEach(function (card) {{
    rows.push(["card", card.textContent].join("|"));
  }});
  var bars = doc.getElementById("bars").getBoundingClientRect();
  doc.getElementById("plots").dispatchEvent(new MouseEvent("mousemove", {{
    clientX: bars.left + bars.width / 2, clientY: bars.top + 40, bubbles: true}}));
  rows.push(["detail", doc.querySelector("#detail h3").textContent].join("|"));
  rows.push(["title", doc.title].join("|"));
  document.getElementById("out").textContent = rows.join("\\n");
}});
</script></body></html>
"""


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run([CHROMIUM, *SCRIPT.CHROMIUM_FLAGS, "--enable-logging=stderr", "--v=0",
                           f"--user-data-dir={tmp_path / 'profile'}", *args],
                          capture_output=True, text=True, timeout=120, check=False)


def _probe(page: Path, tmp_path: Path) -> tuple[dict[str, list[list[str]]], str]:
    probe = tmp_path / f"probe-{page.parent.name}.html"
    probe.write_text(PROBE.format(src=page.as_uri()))
    done = _chromium(tmp_path, "--dump-dom", probe.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<pre id="out">(.*?)</pre>', done.stdout, re.DOTALL)
    assert found and found.group(1) != "pending", done.stdout[-2000:]
    rows: dict[str, list[list[str]]] = {}
    for line in found.group(1).splitlines():
        head, *rest = line.split("|")
        rows.setdefault(head, []).append(rest)
    return rows, done.stderr


def test_the_page_draws_its_canvases_and_shows_a_hovered_request(
        synthetic_run: Callable[..., Path], tmp_path: Path) -> None:
    rows, log = _probe(write_timeline(synthetic_run(300)), tmp_path)
    canvases = {row[0]: [int(v) for v in row[1:]] for row in rows["canvas"]}
    assert set(canvases) == {"bars", "marks", "shares"}
    for name, (width, height, inked) in canvases.items():
        assert width > 600 and height > 60 and inked > 100, name  # drawn, not an empty box
    assert int(rows["render"][0][1]) == 300  # wide enough: one column per request
    assert int(rows["cards"][0][0]) >= 8
    assert int(rows["compactions"][0][0]) == 7  # requests 40, 80, ... 280
    hovered = re.fullmatch(r"Request (\d+) of 300 · turn \d+", rows["detail"][0][0])
    assert hovered and 120 < int(hovered.group(1)) < 180  # the request under the pointer
    assert rows["title"][0][0].startswith("Session timeline")
    # No console output at all: no error, no warning, no stray log line from the page.
    assert [line for line in log.splitlines() if ":CONSOLE" in line] == []


def test_the_demo_session_shows_its_two_compactions_and_its_final_accounting(
        mas_ctl: Callable[..., Any], tmp_path: Path) -> None:
    agent = ROOT / "library-standard" / "examples" / "agent"
    out = tmp_path / "demo-session"
    assert mas_ctl("run", agent / "agent.yaml", "--input", agent / "turns.jsonl",
                   "--out", out).code == 0
    rows, log = _probe(write_timeline(out), tmp_path)
    assert rows["compactions"] == [["2"]]
    assert [row[3] for row in rows["compaction"][1:]] == ["turn boundary", "turn boundary"]
    cards = [row[0] for row in rows["card"]]
    assert "history, last requestsent 22 · summarized 116 · dropped 0 · cut 0" in " ".join(cards)
    assert any(card.startswith("compactions2") for card in cards)
    assert [line for line in log.splitlines() if ":CONSOLE" in line] == []


def test_ten_thousand_requests_draw_one_column_per_pixel(
        synthetic_run: Callable[..., Path], tmp_path: Path,
        record_property: Callable[[str, object], None]) -> None:
    small, _ = _probe(write_timeline(synthetic_run(1_000, "small")), tmp_path)
    large, log = _probe(write_timeline(synthetic_run(10_000, "large")), tmp_path)
    small_ms, large_ms = float(small["render"][0][0]), float(large["render"][0][0])
    large_total = float(large["render"][0][2])  # with the data parsed and the tables built
    columns = int(large["render"][0][1])
    assert columns < 2_000  # aggregated to the plot's pixels, not 10,000 bars
    assert int(large["compactions"][0][0]) == 249
    # Recorded, never asserted on: a wall clock on a shared machine says little.
    record_property("render_ms_1000", small_ms)
    record_property("render_ms_10000", large_ms)
    record_property("page_ms_10000", large_total)
    print(f"render: 1,000 requests {small_ms:.1f} ms, 10,000 requests {large_ms:.1f} ms "
          f"(ratio {large_ms / max(small_ms, 0.01):.2f}; whole script {large_total:.1f} ms)")
    assert [line for line in log.splitlines() if ":CONSOLE" in line] == []


def test_a_screenshot_has_the_window_size(synthetic_run: Callable[..., Path],
                                          tmp_path: Path) -> None:
    shot = SCRIPT.screenshot(write_timeline(synthetic_run(500)), tmp_path / "timeline.png",
                             (1280, 1000), tmp_path / "profile")
    header = shot.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", header[16:24]) == (1280, 1000)
    assert shot.stat().st_size > 30_000  # a drawn page, not a blank one
