"""The runnable pins: spec 000's summarizer-override example and the third-party plugin
package under library-standard/examples/plugins/ (issue 3, scope 7)."""

from __future__ import annotations

import importlib.util
import json
import logging
import subprocess
import sys
from pathlib import Path

from mas.runtime import Runtime
from mas.runtime.context import ContextPart, History, prepare_request
from mas.runtime.spec.compile import compile_all
from mas.runtime.spec.loader import load_manifest_set

from .conftest import EngineDouble, make_ctx

ROOT = Path(__file__).resolve().parents[2]
OVERRIDE = ROOT / "library-standard/examples/context/summarizer-override/agent.yaml"
PLUGIN_DIR = ROOT / "library-standard/examples/plugins/keyword-summarizer"
PLUGIN_DIST = "mas-example-keyword-summarizer"


def run_session(cm, engine, turns: int, *, window: int = 128_000, reserve: int = 2_000) -> History:
    history = History()
    for i in range(turns):
        user = {
            "role": "user",
            "content": f"Day {i}: visit city {i}, booking ref BK-{i}\n" + "x" * 800,
        }
        prepare_request(
            cm=cm,
            history=history,
            current_input=user,
            window=window,
            reserve=reserve,
            engine=engine,
            parts=[ContextPart("agent", "role", "Plan trips.", placement="system")],
        )
        history.extend([user, {"role": "assistant", "content": f"Booked city {i}."}])
        cm.commit(history)
    return history


def test_summarizer_override_example_compiles_and_runs(caplog) -> None:
    """Spec 000: "Runnable pin: library-standard/examples/context/summarizer-override/"."""
    caplog.set_level(logging.INFO, logger="mas.library.standard.plugins.context")
    compiled = compile_all(Runtime.create(), load_manifest_set([OVERRIDE]))[0]
    cm = compiled.context_manager
    assert (cm.summarizer.model, cm.summarizer.model_source) == ("gpt-4o-mini", "override")
    assert cm.summarizer.instructions.startswith("Preserve city names, dates, and numeric facts.")
    assert cm.budget_settings.summary_threshold == 8_000
    assert (
        "summarizer llm: model=gpt-4o-mini source=override agent_model=gpt-4o "
        "instructions=override" in caplog.text
    )
    engine = EngineDouble()
    run_session(cm, engine, 60)
    assert engine.calls and {c["model"] for c in engine.calls} == {"gpt-4o-mini"}
    assert engine.calls[0]["messages"][0]["content"].startswith("Preserve city names")
    assert "compacted" in caplog.text and "model=gpt-4o-mini source=override" in caplog.text
    assert cm.last_compaction_metadata["threshold"] == 8_000


def _example_module():
    path = PLUGIN_DIR / "src/mas_example_keyword_summarizer/plugin.py"
    spec = importlib.util.spec_from_file_location("keyword_summarizer_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_example_plugin_binds_by_type_string_and_runs(register_plugin) -> None:
    """A plugin's summarizer binds by its type string inside `summarising` and is used."""
    register_plugin(_example_module(), "keyword_summarizer", entry_points=False)
    runtime = register_plugin(
        __import__("mas.library.standard.plugin", fromlist=["x"]), "standard", entry_points=False
    )
    from mas.library.standard.plugins.context.identifier_check import SECTION_HEAD
    from mas.runtime.spec.binding import Binding, bind

    raw = {
        "type": "summarising",
        "params": {
            "keep_turns": 2,
            "summarizer": {
                "type": "keyword-digest",
                "params": {"keywords": ["booking"], "max_chars": 400},
            },
        },
    }
    cm = bind("context_manager", Binding.model_validate(raw), make_ctx(runtime))
    history = run_session(cm, None, 40, window=8_000, reserve=500)
    assert cm.state.summary is not None and "BK-" in cm.state.summary
    # The plugin's own text keeps its cap; the identifier check appends what it dropped.
    prose, _, kept = cm.state.summary.partition(SECTION_HEAD)
    assert len(prose) <= 400
    # Issue 22: the default repair makes no re-ask, so the newest code stays in the
    # plugin's prose and the section holds the older ones its 400 characters dropped.
    assert "BK-10" in kept and "BK-24" in prose and cm.state.identifiers["missing"] == 0
    assert len(history.turn_starts()) <= 40


def test_installed_example_plugin_is_discovered_through_entry_points(tmp_path: Path) -> None:
    """DESIGN §3: a third-party distribution is discovered through entry-point group mas,
    listed by mas-ctl plugins, and recorded as the provider of its type."""
    entry = Runtime.create().registries.summarizer.get("keyword_digest")
    assert entry.provider.distribution == PLUGIN_DIST
    listing = subprocess.run(
        [str(Path(sys.executable).with_name("mas-ctl")), "plugins"],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    plugins = {p["name"]: p for p in json.loads(listing.stdout)["plugins"]}
    assert plugins["keyword_summarizer"]["types"] == {"summarizer": ["keyword_digest"]}
    assert plugins["keyword_summarizer"]["distribution"] == PLUGIN_DIST
    manifest = tmp_path / "agent.yaml"
    manifest.write_text(
        "apiVersion: mas/v1\nkind: Agent\nmetadata: {name: digest}\nspec:\n"
        "  models: [{id: main, model: gpt-4o, context_window: 6000, max_tokens: 500}]\n"
        "  context_manager:\n    type: summarising\n    params:\n      keep_turns: 2\n"
        "      summarizer: {type: keyword-digest, params: {keywords: [booking]}}\n"
    )
    compiled = compile_all(Runtime.create(), load_manifest_set([manifest]))[0]
    cm = compiled.context_manager
    assert type(cm.summarizer).__name__ == "KeywordDigest"
    run_session(cm, None, 30, window=6_000, reserve=500)
    assert cm.state.summary_count >= 1 and "BK-" in cm.state.summary
