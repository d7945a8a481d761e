"""The timeline page (mas-ctl inspect --html): its data, that it holds no text, its size,
and the refusals of bad run folders and paths. The browser side: test_timeline_browser.py."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from mas.runtime.timeline import EventLines, timeline_data, write_timeline

AGENT = """
apiVersion: mas/v1
kind: Agent
metadata: {name: timeline-probe}
spec:
  models: [{id: main, model: offline/default, context_window: 2500, max_tokens: 200}]
  context_manager: {type: summarising, params: {keep_turns: 2}}
"""


def _page_data(page: Path) -> dict[str, Any]:
    found = re.search(r'<script type="application/json" id="timeline-data">(.*?)</script>',
                      page.read_text(), re.DOTALL)
    assert found
    data: dict[str, Any] = json.loads(found.group(1))
    return data


def test_a_real_session_page_holds_its_requests_compactions_and_no_text(
        write: Callable[[str, str], Path], mas_ctl: Callable[..., Any], tmp_path: Path,
        secret: str) -> None:
    turns = tmp_path / "turns.jsonl"
    filler = f"{secret} words about the weather and other small talk " * 25
    turns.write_text("".join(json.dumps(f"Turn {i}. {filler}") + "\n" for i in range(12)))
    out = tmp_path / "run"
    assert mas_ctl("run", write("agent.yaml", AGENT), "--input", turns, "--out", out).code == 0
    done = mas_ctl("inspect", out, "--html")
    assert done.code == 0, done.err
    page = out / "timeline.html"
    assert done.out.strip() == str(page)
    html = page.read_text()
    assert secret in (out / "transcript.json").read_text()  # the run did carry the text
    assert secret not in html and "weather" not in html
    assert "<link" not in html and "src=" not in html and "http" not in html  # self-contained
    data = _page_data(page)
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    assert data["requests"] == sum(e["event"] == "context.assembled" for e in events) > 0
    assert data["turns"] == 12
    stops = [e for e in events if e["event"] == "compaction.stop"]
    compactions = data["markers"]["compaction"]
    assert len(compactions["rows"]) == len(stops) > 0
    cols = compactions["cols"]
    assert {"llm_calls", "identifier_check.found", "at_boundary", "failed"} <= set(cols)
    last = {state: data["accounting"][state]["messages"][-1] for state in data["accounting"]}
    final = next(e for e in reversed(events) if e["event"] == "context.assembled")
    assert last == {state: final["accounting"][state]["messages"] for state in last}
    assert "timeline-probe" in html  # the agent's name heads the page
    assert data["archive"]["messages"] > 0 and data["skipped_lines"] == 0


def test_text_fields_never_pass_and_unknown_kinds_are_ignored(
        synthetic_run: Callable[..., Path], secret: str) -> None:
    page = write_timeline(synthetic_run(300))
    html = page.read_text()
    assert secret not in html and "brand.new.kind" not in html
    data = _page_data(page)
    assert data["requests"] == 300
    assert data["markers"]["degradation"]["cols"][0] == "kind"
    assert {row[1] for row in data["markers"]["degradation"]["rows"]} == {"budget_cuts"}
    assert set(data["markers"]) == {"compaction", "recall", "pruning", "degradation"}
    assert "summary_text" not in data["markers"]["compaction"]["cols"]


def test_fields_show_when_present_and_a_missing_field_is_no_error(secret: str) -> None:
    events = [
        {"event": "context.assembled"},  # nothing but its name
        {"event": "session.turn"},
        {"event": "compaction.stop", "at_boundary": False, "new_measure": 7},  # explicit flag
        {"event": "context.assembled", "breakdown": {"skills": 12, "history": 30, "Bad Key": 1},
         "estimated_tokens": 42},
        {"event": "compaction.exception", "kind": "summarizer_error", "reason": secret},
        {"event": "context.assembled", "breakdown": {"history": 5}},
    ]
    data = timeline_data(events)
    assert data["requests"] == 3 and data["keys"] == ["skills", "history"]
    assert data["parts"] == [[0, 12, 0], [0, 30, 5]]
    assert data["est"] == [None, 42, None] and data["window"] == [None, None, None]
    table = data["markers"]["compaction"]
    rows = [dict(zip(["at", *table["cols"]], row, strict=True)) for row in table["rows"]]
    assert rows[0]["new_measure"] == 7 and rows[0]["at_boundary"] == 0  # its own flag wins
    assert rows[1]["failed"] == 1 and rows[1]["kind"] == "summarizer_error"
    assert rows[1]["at_boundary"] == 0  # a request of this turn came before it: inside
    assert secret not in json.dumps(data)


def test_a_compaction_before_a_turns_first_request_is_at_its_boundary() -> None:
    events = [{"event": "context.assembled"}, {"event": "session.turn"},
              {"event": "compaction.stop"}, {"event": "context.assembled"}]
    table = timeline_data(events)["markers"]["compaction"]
    assert dict(zip(["at", *table["cols"]], table["rows"][0], strict=True))["at_boundary"] == 1


def test_torn_and_foreign_lines_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"event": "context.assembled"}\n[1, 2]\nnot json\n{"no": "event"}\n'
                    '{"event": "context.assem')
    lines = EventLines(path)
    assert timeline_data(lines)["requests"] == 1
    assert lines.skipped == 4  # counted, and said on the page
    (tmp_path / "transcript.json").write_text("{}")
    assert _page_data(write_timeline(tmp_path))["skipped_lines"] == 4


EVENT = st.fixed_dictionaries({"event": st.sampled_from(
    ["context.assembled", "session.turn", "compaction.stop", "compaction.exception", "recall",
     "context.pruned", "degraded", "llm.call", "other"])}, optional={
    "breakdown": st.dictionaries(st.sampled_from(["system", "history", "x_y", "BAD"]),
                                 st.one_of(st.integers(-5, 10**6), st.text(max_size=3),
                                           st.none(), st.floats())),
    "estimated_tokens": st.one_of(st.integers(0, 10**6), st.text(max_size=3), st.booleans()),
    "context_window": st.one_of(st.integers(0, 10**6), st.none()),
    "accounting": st.one_of(st.none(), st.just({"sent": {"messages": 1, "tokens": 3}}),
                            st.just({"cut": "x"})),
    "kind": st.text(max_size=8), "llm_calls": st.integers(0, 9), "purpose": st.just("turn"),
    "nested": st.dictionaries(st.text(max_size=4), st.integers()),
})


@given(st.lists(EVENT, max_size=40))
def test_every_column_has_one_entry_per_request(events: list[dict[str, Any]]) -> None:
    data = timeline_data(events)
    n = data["requests"]
    assert all(len(data[c]) == n for c in ("est", "turn", "prompt", "cached", "over", "window",
                                           "hard", "trigger"))
    assert all(len(part) == n for part in data["parts"]) and len(data["parts"]) == len(data["keys"])
    assert all(len(data["accounting"][s][f]) == n for s in data["accounting"]
               for f in ("messages", "tokens"))
    for table in data["markers"].values():
        assert all(len(row) == len(table["cols"]) + 1 and 0 <= row[0] <= n
                   for row in table["rows"])
    json.dumps(data, allow_nan=False)  # plain JSON, no NaN or infinity


def test_ten_thousand_requests_stay_a_few_megabytes(synthetic_run: Callable[..., Path]) -> None:
    page = write_timeline(synthetic_run(10_000))
    size = page.stat().st_size
    assert size < 3_000_000, size
    assert _page_data(page)["requests"] == 10_000


# Bad input: one line, exit 2, nothing written.


def test_not_a_run_folder(mas_ctl: Callable[..., Any], tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    done = mas_ctl("inspect", tmp_path / "empty", "--html")
    assert done.code == 2 and done.err.count("\n") == 1
    assert "not a session run folder" in done.err
    assert not (tmp_path / "empty" / "timeline.html").exists()


def test_an_out_outside_the_run_and_the_current_folder(
        mas_ctl: Callable[..., Any], run_folder: Callable[..., Path], tmp_path: Path) -> None:
    folder = run_folder([{"event": "context.assembled"}])
    outside = tmp_path.parent / "elsewhere.html"
    done = mas_ctl("inspect", folder, "--html", "--out", outside)
    assert done.code == 2 and done.err.count("\n") == 1 and "outside" in done.err
    assert not outside.exists()
    inside = mas_ctl("inspect", folder, "--html", "--out", "page.html")  # the current folder
    assert inside.code == 0 and (tmp_path / "page.html").is_file()


def test_a_symlinked_page_is_refused(mas_ctl: Callable[..., Any],
                                     run_folder: Callable[..., Path], tmp_path: Path) -> None:
    folder = run_folder([{"event": "context.assembled"}])
    target = tmp_path / "target.html"
    (folder / "timeline.html").symlink_to(target)
    done = mas_ctl("inspect", folder, "--html")
    assert done.code == 2 and done.err.count("\n") == 1 and "symbolic link" in done.err
    link = tmp_path / "link.html"
    link.symlink_to(target)
    done = mas_ctl("inspect", folder, "--html", "--out", link)
    assert done.code == 2 and "symbolic link" in done.err
    assert not target.exists()


def test_out_needs_html(mas_ctl: Callable[..., Any], run_folder: Callable[..., Path]) -> None:
    done = mas_ctl("inspect", run_folder([]), "--out", "x.html")
    assert done.code == 2 and done.err == "error: --out: only with --html (the view is printed on stdout)\n"


def test_the_docs_commands_and_example_work_as_written(
        mas_ctl: Callable[..., Any], synthetic_run: Callable[..., Path], tmp_path: Path) -> None:
    # The section of docs/run-folder.md, run from a folder holding runs/demo-session.
    text = (Path(__file__).resolve().parents[2] / "docs" / "run-folder.md").read_text()
    section = text.split("## See the context: the timeline", 1)[1].split("\n## ", 1)[0]
    (tmp_path / "runs").mkdir()
    synthetic_run(120).rename(tmp_path / "runs" / "demo-session")
    commands = [line.split("#")[0].split()[1:] for line in re.findall(
        r"^mas-ctl .*$", section.split("```bash", 1)[1].split("```", 1)[0], re.M)]
    assert len(commands) == 2
    for command in commands:
        assert mas_ctl(*command).code == 0, command
    assert (tmp_path / "runs/demo-session/timeline.html").is_file()
    assert (tmp_path / "session.html").is_file()
    code = re.findall(r"```python\n(.*?)```", section, re.DOTALL)[0]
    exec(compile(code, "docs/run-folder.md", "exec"), {})  # noqa: S102
    assert (tmp_path / "x.html").is_file()
    assert "img/timeline.png" in section
    assert (Path(__file__).resolve().parents[2] / "docs" / "img" / "timeline.png").is_file()
