"""Typed registries of the named types plugins provide, one per kind.

A manifest binds a strategy by its ``type:`` string; the kind comes from where the string
stands (``spec.context_manager.type`` is a ``context_manager``). Names are lower_snake_case
and are looked up with ``-`` folded to ``_`` and case ignored.

When two plugins register the same name for one kind, neither gets the bare name: it is
refused with one warning naming both distributions, everything else both registered
stays, and ``plugin:name`` (the plugin's entry-point name) binds the one the user chose.
"""

from __future__ import annotations

import difflib
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from mas.runtime._plugin_faults import warn_once
from mas.runtime.errors import DuplicateTypeError, TypeClashError, UnknownTypeError

KINDS: tuple[str, ...] = (
    "context_manager",
    "summarizer",
    "identifier_extractor",
    "eval_metric",
    "lab_step",
    "model_provider",
    "cli_command",
)
"""Every kind of registered type, in the order their hooks are called."""

REGISTRATION_HOOKS: dict[str, str] = {
    "context_manager": "mas_register_context_managers",
    "summarizer": "mas_register_summarizers",
    "identifier_extractor": "mas_register_identifier_extractors",
    "eval_metric": "mas_register_eval_metrics",
    "lab_step": "mas_register_lab_steps",
    "model_provider": "mas_register_model_providers",
    "cli_command": "mas_register_cli_commands",
}
"""The registration hookspec that fills each kind."""

LIBRARY_OF: dict[str, str] = {
    "context_manager": "mas-library-standard",
    "summarizer": "mas-library-standard",
    "model_provider": "mas-library-standard",
    "eval_metric": "mas-library-eval",
    "lab_step": "mas-library-lab",
    "cli_command": "mas-library-eval and mas-library-lab",
}
"""The distribution of this workspace whose plugin registers the kind's standard types."""

INSTALL_HINT = "from a mas-lab checkout: pip install -r requirements.txt"
"""How to get every library of the workspace, for errors that name a missing one."""

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
QUALIFIER = ":"
"""Between a plugin's entry-point name and a type name: ``standard:drop``."""


class NoParams(BaseModel):
    """Params model for types that take none: any key given is an error."""

    model_config = ConfigDict(extra="forbid")


def fold_type_name(name: str) -> str:
    """Fold a user-written type string for lookup: trim, lower-case, ``-`` to ``_``."""
    return name.strip().lower().replace("-", "_")


@dataclass(frozen=True)
class PluginInfo:
    """Which plugin, and which distribution, provided something."""

    name: str
    distribution: str | None = None
    version: str | None = None

    def describe(self) -> str:
        """``plugin "standard" (mas-library-standard 0.1.0)``, for error messages."""
        if self.distribution:  # a one-file plugin has its file there, and no version
            where = " ".join(filter(None, (self.distribution, self.version)))
            return f'plugin "{self.name}" ({where})'
        return f'plugin "{self.name}"'


IN_PROCESS_PROVIDER = PluginInfo("<in-process>")
"""The provider of types registered outside any registration hook."""


@dataclass(frozen=True)
class TypeEntry:
    """One registered type: its name, how to build it, and its params model."""

    kind: str
    name: str
    factory: Callable[..., Any]
    params: type[BaseModel]
    description: str
    provider: PluginInfo
    aliases: tuple[str, ...] = ()

    def validate_params(self, raw: dict[str, Any] | None) -> BaseModel:
        """Validate ``raw`` against this type's ``Params``; raises pydantic's error."""
        return self.params.model_validate(raw or {})


def _check_schema(kind: str, name: str, params: type[BaseModel]) -> None:
    # `mas-ctl schema` and `plugins TYPE` publish every params model: one that cannot be
    # written as JSON Schema is refused here, as its plugin's fault, not in those commands.
    try:
        params.model_json_schema(by_alias=True)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(
            f"{kind} type {name!r}: params model {params.__name__} has no JSON Schema "
            f"({first}); give each field a type a YAML value can fill"
        ) from exc


@dataclass
class KindRegistry:
    """The registry of one kind, handed to that kind's registration hook.

    ``current`` is set by the runtime to the plugin whose hook is running, so each entry
    records its provider without the plugin having to say who it is. It is kept per
    thread: each hook runs on a thread of its own (with a deadline), and a hook abandoned
    past its deadline must not register under the plugin that runs next. ``used`` holds
    the entries :meth:`get` has handed out (by ``plugin:name``): what this runtime bound,
    for a run's provenance.
    ``clashes`` holds, per name (or alias) two plugins registered, every entry claiming
    it; ``strict`` makes such a clash a :class:`DuplicateTypeError` instead.
    """

    kind: str
    entries: dict[str, TypeEntry] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    failed_plugins: list[str] = field(default_factory=list)
    used: dict[str, TypeEntry] = field(default_factory=dict)
    clashes: dict[str, list[TypeEntry]] = field(default_factory=dict)
    strict: bool = False
    _local: threading.local = field(default_factory=threading.local, repr=False, compare=False)

    @property
    def current(self) -> PluginInfo:
        """The plugin whose registration hook runs on this thread."""
        info = getattr(self._local, "info", None)
        return info if isinstance(info, PluginInfo) else IN_PROCESS_PROVIDER

    @current.setter
    def current(self, info: PluginInfo) -> None:
        self._local.info = info

    def register(
        self,
        name: str,
        factory: Callable[..., Any],
        *,
        params: type[BaseModel] | None = None,
        description: str = "",
        aliases: tuple[str, ...] | list[str] = (),
    ) -> None:
        """Add a type string for this kind.

        :param name: lower_snake_case type string users write in manifests.
        :param factory: builds the bound object (its arguments depend on the kind).
        :param params: pydantic v2 model of the type's params; ``extra="forbid"`` expected.
            Omitted means the type takes no params.
        :param description: one line shown by ``mas-ctl plugins``.
        :param aliases: other names that bind the same type (folded like ``name``).
        :raises ValueError: the name is not lower_snake_case, or ``params`` has no JSON
            Schema (a field no YAML value can fill).
        :raises DuplicateTypeError: the same plugin registered the name (or an alias)
            twice, or, when ``strict``, another plugin has it.
        :raises RuntimeError: the registering plugin was left out (a hook that finished
            after its deadline).
        """
        if self.current.name in self.failed_plugins:
            raise RuntimeError(f"plugin {self.current.name!r} was left out; {name!r} refused")
        if not _NAME.match(name):
            raise ValueError(f"{self.kind} type name {name!r} must be lower_snake_case")
        if params is not None:
            _check_schema(self.kind, name, params)
        entry = TypeEntry(
            kind=self.kind,
            name=name,
            factory=factory,
            params=params or NoParams,
            description=description or (factory.__doc__ or "").strip().split("\n")[0],
            provider=self.current,
            aliases=tuple(fold_type_name(a) for a in aliases),
        )
        keys = (name, *entry.aliases)
        claims = {key: self._claims(key) for key in keys}
        for key, holders in claims.items():
            mine = [h for h in holders if h.provider == self.current]
            if holders and (self.strict or mine):
                raise DuplicateTypeError(
                    self.kind, key, (mine or holders)[0].provider.describe(),
                    self.current.describe(),
                )
        for key, holders in claims.items():
            if holders:
                self._refuse(key, [*holders, entry])
        if not claims[name]:
            self.entries[name] = entry
        for alias in entry.aliases:
            if not claims[alias]:
                self.aliases[alias] = name

    def _claims(self, key: str) -> list[TypeEntry]:
        # Every entry holding ``key`` as its name or an alias, clashed or not.
        if key in self.clashes:
            return list(self.clashes[key])
        canonical = self.aliases.get(key, key)
        if canonical in self.entries:
            return [self.entries[canonical]]
        return [e for e in self.clashes.get(canonical, []) if key in e.aliases]

    def _refuse(self, key: str, holders: list[TypeEntry]) -> None:
        # No side wins: the key leaves the lookup tables; each holder keeps its other keys.
        self.entries.pop(key, None)
        self.aliases.pop(key, None)
        self.clashes[key] = holders
        warn_once(str(self._clash(key)))

    def _clash(self, key: str) -> TypeClashError:
        providers = [(h.provider.name, h.provider.describe()) for h in self.clashes[key]]
        return TypeClashError(self.kind, key, providers)

    def discard_provider(self, plugin: str) -> None:
        """Forget every type (and alias) that plugin ``plugin`` registered."""
        gone = {name for name, e in self.entries.items() if e.provider.name == plugin}
        for name in gone:
            del self.entries[name]
        self.aliases = {a: n for a, n in self.aliases.items() if n not in gone}
        for key, holders in list(self.clashes.items()):
            left = [h for h in holders if h.provider.name != plugin]
            if len(left) > 1:
                self.clashes[key] = left
                continue
            # The clash is over: the one plugin left holds the key alone again.
            del self.clashes[key]
            for holder in left:
                if key == holder.name:
                    self.entries[key] = holder
                else:
                    self.aliases[key] = holder.name

    def _owner(self, folded: str) -> TypeEntry | None:
        # The one entry ``folded`` binds; a clashed key binds none.
        plugin, qualified, key = folded.rpartition(QUALIFIER)
        if qualified:
            chosen = [e for e in self._claims(key) if fold_type_name(e.provider.name) == plugin]
            return chosen[0] if chosen else None
        holders = [] if key in self.clashes else self._claims(key)
        return holders[0] if len(holders) == 1 else None

    def get(self, name: str) -> TypeEntry:
        """Look a type string up, folding case and ``-``; ``plugin:name`` picks a provider.

        :raises TypeClashError: the bare name is one that two plugins registered.
        :raises UnknownTypeError: listing the available names and the closest match.
        """
        folded = fold_type_name(name)
        entry = self._owner(folded)
        if entry is None:
            if folded in self.clashes:
                raise self._clash(folded)
            raise self.unknown(name)
        self.used[f"{entry.provider.name}{QUALIFIER}{entry.name}"] = entry
        return entry

    def unknown(self, name: str) -> UnknownTypeError:
        """The error for an unknown ``name``: available names, closest match, failed plugins."""
        candidates = sorted(self.entries) + sorted(self.aliases)
        close = difflib.get_close_matches(fold_type_name(name), candidates, n=1, cutoff=0.5)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        if self.failed_plugins:
            hint += f"; plugins that failed to load: {', '.join(self.failed_plugins)}"
        if not self.entries and self.kind in LIBRARY_OF:
            # The kernel alone registers no strategy: say which distribution does.
            hint += (
                f"; no installed plugin registers a {self.kind}: install "
                f"{LIBRARY_OF[self.kind]} ({INSTALL_HINT})"
            )
        return UnknownTypeError(self.kind, name, sorted(self.entries), hint)

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        folded = fold_type_name(name)
        return folded in self.clashes or self._owner(folded) is not None

    def __iter__(self) -> Iterator[TypeEntry]:
        return iter(sorted(self.entries.values(), key=lambda e: e.name))

    def __len__(self) -> int:
        return len(self.entries)

    def bindable(self) -> list[tuple[TypeEntry, list[str]]]:
        """Every registered entry, clashed ones too, by name, with each string binding it:
        its unshared name and aliases, and ``plugin:key`` for every key it registered."""
        found: dict[int, TypeEntry] = {id(e): e for e in self.entries.values()}
        for holders in self.clashes.values():
            found.update((id(e), e) for e in holders)
        listed = []
        for entry in sorted(found.values(), key=lambda e: (e.name, e.provider.name)):
            keys = [entry.name, *entry.aliases]
            plugin = fold_type_name(entry.provider.name)
            listed.append((entry, [k for k in keys if k not in self.clashes]
                           + [f"{plugin}{QUALIFIER}{k}" for k in keys]))
        return listed

    def names(self) -> list[str]:
        """Registered names, sorted (aliases not included)."""
        return sorted(self.entries)


class Registries:
    """All kinds' registries for one runtime: ``registries.summarizer.get("llm")``."""

    def __init__(self) -> None:
        self._by_kind = {kind: KindRegistry(kind) for kind in KINDS}

    def __getitem__(self, kind: str) -> KindRegistry:
        return self._by_kind[kind]

    def used(self) -> list[TypeEntry]:
        """Every entry looked up by name so far, kind by kind (each with its provider)."""
        return [registry.used[key] for registry in self._by_kind.values()
                for key in sorted(registry.used, key=lambda k: registry.used[k].name)]

    def __iter__(self) -> Iterator[KindRegistry]:
        return iter(self._by_kind.values())

    @property
    def context_manager(self) -> KindRegistry:
        """Registry of ``spec.context_manager.type`` strings."""
        return self._by_kind["context_manager"]

    @property
    def summarizer(self) -> KindRegistry:
        """Registry of summarizer type strings."""
        return self._by_kind["summarizer"]

    @property
    def identifier_extractor(self) -> KindRegistry:
        """Registry of identifier extractors (``summarising``'s identifier check)."""
        return self._by_kind["identifier_extractor"]

    @property
    def eval_metric(self) -> KindRegistry:
        """Registry of eval metric ids."""
        return self._by_kind["eval_metric"]

    @property
    def lab_step(self) -> KindRegistry:
        """Registry of lab pipeline step types."""
        return self._by_kind["lab_step"]

    @property
    def model_provider(self) -> KindRegistry:
        """Registry of LiteLLM provider prefixes handled in-process."""
        return self._by_kind["model_provider"]

    @property
    def cli_command(self) -> KindRegistry:
        """Registry of extra ``mas-ctl`` subcommands."""
        return self._by_kind["cli_command"]
