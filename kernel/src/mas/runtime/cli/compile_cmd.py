"""``mas-ctl compile`` and ``mas-ctl validate``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
import yaml

from mas.runtime.cli._app import JSON_OPTION, manifest_options, problems_as_json, state_of
from mas.runtime.degradation import EXIT_DEGRADED
from mas.runtime.errors import ManifestError
from mas.runtime.runtime import Runtime
from mas.runtime.spec.auto import AUTO, dump_with_autos
from mas.runtime.spec.compile import CompiledAgent, binding_checker, compile_all
from mas.runtime.spec.loader import ManifestSet, load_manifest_set
from mas.runtime.spec.resolved import budget_check, resolve_budget
from mas.runtime.spec.windows import resolve_pricing


def _load(
    runtime: Runtime,
    files: tuple[Path, ...],
    overlays: tuple[Path, ...],
    infra: Path | None,
    config: Path | None,
) -> ManifestSet:
    return load_manifest_set(
        list(files),
        overlays=list(overlays),
        infra=infra,
        config=config,
        check_binding=binding_checker(runtime),
    )


@click.command("compile")
@manifest_options(many=True)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable resolution per agent.")
@click.pass_context
def compile_command(
    ctx: click.Context,
    files: tuple[Path, ...],
    overlays: tuple[Path, ...],
    infra: Path | None,
    config: Path | None,
    as_json: bool,
) -> None:
    """Print FILES compiled: bindings normalized, models resolved with their sources."""
    runtime = state_of(ctx).runtime
    with problems_as_json(as_json):
        manifests = _load(runtime, files, overlays, infra, config)
        compiled = compile_all(runtime, manifests)
    if as_json:
        click.echo(json.dumps({"agents": [resolution(a, manifests) for a in compiled]}, indent=2))
        return
    documents = [compiled_document(a, manifests) for a in compiled]
    click.echo(
        yaml.dump_all(documents, Dumper=_Dumper, sort_keys=False, allow_unicode=True), nl=False
    )


@click.command("validate")
@manifest_options(many=True)
@JSON_OPTION
@click.pass_context
def validate_command(
    ctx: click.Context,
    files: tuple[Path, ...],
    overlays: tuple[Path, ...],
    infra: Path | None,
    config: Path | None,
    as_json: bool,
) -> None:
    """Check FILES: exit 0 and say so, or print one line per problem and exit 2.

    A plugin whose check raised is left out and the others still run; the answer is then
    "incomplete", exit 3, since the files were not checked by every check.

    Beyond loading and compiling, every agent's budget is resolved (the bounds of
    docs/manifests/agent.md) and plugins add their own pre-run checks (``mas_check_manifests``:
    for an experiment, what ``lab run`` checks before its first session). With --json
    the answer is ``{"ok": true, "documents": N, "agents": M}`` or ``{"ok": false,
    "problems": [...]}``.
    """
    runtime = state_of(ctx).runtime
    with problems_as_json(as_json):
        manifests = _load(runtime, files, overlays, infra, config)
        compiled = _checked(runtime, manifests, config)
    kinds = (
        len(compiled)
        + len(manifests.mases)
        + (manifests.infra is not None)
        + len(manifests.overlays)
    )
    kinds += manifests.experiment is not None
    # A check plugin that raised was left out: the files passed the checks that ran, and
    # saying "valid" would hide the one that did not.
    incomplete = list(runtime.faults)
    if as_json:
        answer: dict[str, object] = {"ok": not incomplete, "documents": kinds,
                                     "agents": len(compiled)}
        if incomplete:
            answer["incomplete"] = incomplete
        click.echo(json.dumps(answer))
    elif incomplete:
        for fault in incomplete:
            click.echo(f"degraded: {fault}", err=True)
        click.echo(f"incomplete: {kinds} document(s) passed the checks that ran "
                   f"({len(compiled)} agent(s)); not every check ran", err=True)
    else:
        click.echo(f"ok: {kinds} document(s) valid ({len(compiled)} agent(s))")
    if incomplete:
        sys.exit(EXIT_DEGRADED)


def _checked(runtime: Runtime, manifests: ManifestSet, config: Path | None) -> list[CompiledAgent]:
    """Compile, resolve every budget and ask the plugins; all problems at once."""
    try:
        compiled = compile_all(runtime, manifests)
        problems = budget_check(compiled, manifests)
    except ManifestError as exc:
        compiled, problems = [], list(exc.problems)
    answers = runtime.call_hook(
        "mas_check_manifests", runtime=runtime, manifests=manifests, config=config
    )
    for answer in answers:
        problems.extend(p for p in answer or [] if p not in problems)
    if problems:
        raise ManifestError(problems)
    return compiled


class _Dumper(yaml.SafeDumper):
    """Safe dumper that writes multi-line strings as literal blocks, the way users write them."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def resolution(agent: CompiledAgent, manifests: ManifestSet) -> dict[str, Any]:
    """The machine-readable resolution of one agent (``compile --json``)."""
    budget = resolve_budget(agent, manifests)
    summarizer = None
    if agent.summarizer is not None:
        model = agent.summarizer_model
        summarizer = {
            "type": agent.summarizer.type,
            "model": model.model if model else None,
            "source": model.source if model else None,
        }
    return {
        "agent": agent.name,
        "file": agent.loaded.source,
        "turn_model": {"model": agent.turn_model.model, "source": agent.turn_model.source},
        "context_manager": {"type": agent.binding.type, "source": agent.binding_source},
        "summarizer": summarizer,
        **budget.as_dict(),
        "pricing": _pricing(agent.turn_model.model, manifests),
    }


def _pricing(model: str, manifests: ManifestSet) -> dict[str, Any]:
    # Which source prices the turn model: infra override, a dated catalog override, or
    # LiteLLM's map; an unpriced model says so instead of leaving the field out.
    infra = manifests.infra.spec if manifests.infra else None
    pricing = resolve_pricing(
        model,
        infra_pricing=infra.generation.pricing if infra else None,
        infra_mappings=infra.models if infra else None,
    )
    return pricing.to_dict() if pricing is not None else {"source": "unpriced"}


def compiled_document(agent: CompiledAgent, manifests: ManifestSet) -> dict[str, Any]:
    """The agent manifest with its binding normalized, plus a ``status`` of resolved values."""
    manifest = agent.loaded.agent
    spec = manifest.spec.model_dump(mode="json", exclude_none=True, exclude={"working_memory"})
    for row in spec.get("models", []):
        row.setdefault("context_window", AUTO)
    params = dump_with_autos(agent.params)
    if agent.summarizer is not None and agent.summarizer_params is not None:
        params["summarizer"] = {
            "type": agent.summarizer.type,
            "params": dump_with_autos(agent.summarizer_params),
        }
    spec["context_manager"] = {"type": agent.binding.type, "params": params}
    # The manifest's own field order, wherever the binding came from (so a recompile of
    # the output prints the same text).
    spec = {name: spec[name] for name in type(manifest.spec).model_fields if name in spec}
    return {
        "apiVersion": manifest.api_version,
        "kind": manifest.kind,
        "metadata": manifest.metadata.model_dump(mode="json", exclude_defaults=True),
        "spec": spec,
        "status": resolution(agent, manifests),
    }

