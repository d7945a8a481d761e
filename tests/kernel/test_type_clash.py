"""Two plugins registering one name: only that name is refused, both stay choosable (issue 25, item 9)."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mas.runtime import Runtime, hookimpl
from mas.runtime.errors import DuplicateTypeError, TypeClashError, UnknownTypeError
from mas.runtime.registry import KindRegistry, PluginInfo, Registries
from mas.runtime.spec.manifests import Agent
from mas.runtime.spec.schema import kind_schema

ONE = PluginInfo("one", "dist-one", "1.0")
TWO = PluginInfo("two", "dist-two", "2.0")
THREE = PluginInfo("three", "dist-three", "3.0")


def _register(registry: KindRegistry, who: PluginInfo, name: str, *aliases: str) -> None:
    registry.current = who
    registry.register(name, lambda p, c: (who.name, name), aliases=list(aliases))


def test_only_the_clashing_name_is_refused_with_one_line_naming_both(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A name no other test uses: the warning is logged once per process.
    registry = KindRegistry("summarizer")
    _register(registry, ONE, "common")
    _register(registry, ONE, "only_one")
    with caplog.at_level(logging.WARNING, "mas.runtime.plugins"):
        _register(registry, TWO, "common")
    _register(registry, TWO, "only_two")

    [line] = [r.getMessage() for r in caplog.records if "'common'" in r.getMessage()]
    assert line == (
        "summarizer type 'common' is registered by both plugin \"one\" (dist-one 1.0) and "
        "plugin \"two\" (dist-two 2.0); neither is bound by that name: write 'one:common' "
        "or 'two:common' to choose"
    )
    with pytest.raises(TypeClashError) as info:
        registry.get("common")
    assert isinstance(info.value, UnknownTypeError), "reported wherever an unknown type is"
    assert str(info.value) == line
    assert registry.get("one:common").provider == ONE
    assert registry.get("Two:Common").provider == TWO
    assert registry.names() == ["only_one", "only_two"]
    assert "common" in registry, "the name is taken, by two"
    with pytest.raises(UnknownTypeError):
        registry.get("three:common")


def test_a_third_claimant_joins_the_clash() -> None:
    registry = KindRegistry("lab_step")
    for who in (ONE, TWO, THREE):
        _register(registry, who, "step")
    with pytest.raises(TypeClashError, match="'one:step' or 'two:step' or 'three:step'"):
        registry.get("step")
    assert registry.get("three:step").provider == THREE


def test_an_alias_clash_refuses_the_alias_only() -> None:
    registry = KindRegistry("eval_metric")
    _register(registry, ONE, "recall", "hits")
    _register(registry, TWO, "hits")
    assert registry.get("recall").provider == ONE
    with pytest.raises(TypeClashError):
        registry.get("hits")
    assert registry.get("one:hits").name == "recall"
    assert registry.get("two:hits").name == "hits"


def test_the_aliases_of_a_clashed_name_still_bind_their_own_type() -> None:
    registry = KindRegistry("summarizer")
    _register(registry, ONE, "brief", "short")
    _register(registry, TWO, "brief")
    assert registry.get("short").provider == ONE


def test_a_plugin_left_out_ends_its_clashes() -> None:
    registry = KindRegistry("summarizer")
    _register(registry, ONE, "shared", "alike")
    _register(registry, TWO, "shared", "alike")
    registry.discard_provider("two")
    assert registry.clashes == {}
    assert registry.get("shared").provider == ONE
    assert registry.get("alike").provider == ONE


def test_one_plugin_registering_a_name_twice_is_its_own_fault() -> None:
    registry = KindRegistry("summarizer")
    _register(registry, ONE, "again")
    with pytest.raises(DuplicateTypeError, match="registered twice"):
        _register(registry, ONE, "again")


def test_strict_refuses_a_clash_as_a_duplicate() -> None:
    registry = KindRegistry("summarizer", strict=True)
    _register(registry, ONE, "shared")
    with pytest.raises(DuplicateTypeError, match='by plugin "one".*by plugin "two"'):
        _register(registry, TWO, "shared")


def test_a_type_chosen_by_its_plugin_is_in_the_provenance() -> None:
    registries = Registries()
    _register(registries.summarizer, ONE, "shared")
    _register(registries.summarizer, TWO, "shared")
    registries.summarizer.get("two:shared")
    assert [e.provider for e in registries.used()] == [TWO]


@given(st.lists(st.tuples(st.sampled_from([ONE, TWO, THREE]),
                          st.sampled_from(["a", "b", "c", "d"])), max_size=12))
def test_every_registration_stays_reachable_and_a_bare_name_binds_iff_unshared(
    registrations: list[tuple[PluginInfo, str]],
) -> None:
    registry = KindRegistry("summarizer")
    holders: dict[str, set[str]] = {}
    for who, name in registrations:
        if who.name in holders.get(name, set()):
            continue  # one plugin registering a name twice is its own fault, tested above
        _register(registry, who, name)
        holders.setdefault(name, set()).add(who.name)
    for name, plugins in holders.items():
        for plugin in plugins:
            assert registry.get(f"{plugin}:{name}").provider.name == plugin
        if len(plugins) == 1:
            assert registry.get(name).provider.name in plugins
        else:
            with pytest.raises(TypeClashError):
                registry.get(name)
    assert registry.names() == sorted(n for n, p in holders.items() if len(p) == 1)


def test_the_schema_offers_each_side_of_a_clash_by_its_plugin() -> None:
    def mas_register_summarizers(registry: KindRegistry) -> None:
        registry.register("drop", lambda p, c: None)

    plugin = SimpleNamespace(mas_register_summarizers=hookimpl(mas_register_summarizers))
    schema = kind_schema(Runtime.create(plugins=[("mine", plugin)]), Agent)
    validator = jsonschema.Draft202012Validator(schema)

    def agent(summarizer: str) -> dict[str, object]:
        return {"apiVersion": "mas/v1", "kind": "Agent", "metadata": {"name": "a"},
                "spec": {"context_manager": {"type": "summarising",
                                             "params": {"summarizer": summarizer}}}}

    assert validator.is_valid(agent("standard:drop"))
    assert validator.is_valid(agent("mine:drop"))
    assert not validator.is_valid(agent("drop")), "the bare name binds neither"
