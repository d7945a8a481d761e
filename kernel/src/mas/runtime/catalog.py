"""Model facts: input windows and prices from LiteLLM's bundled map, with dated overrides.

LiteLLM's bundled model map is the primary source. It is read as a JSON file inside the
installed ``litellm`` package, once per process, without importing litellm (seconds of
start-up, and a network fetch without ``LITELLM_LOCAL_MODEL_COST_MAP``). The kernel's
``data/catalog.json`` holds only dated overrides: models the map lacks, or fields it gets
wrong. An override wins for each field it sets (its window, its pricing block); the rest
still comes from the map. Every value carries its source label, ``litellm-map <version>``
or ``catalog <as_of>``, which ``mas-ctl compile`` prints.

A model string is looked up as written, then with its provider prefixes stripped one at a
time (``vertex_ai/gemini-2.5-flash`` -> ``gemini-2.5-flash``), in each source. Infra
``generation.context_window`` / ``generation.pricing`` override both (see
:mod:`mas.runtime.spec.windows`).
"""

from __future__ import annotations

import importlib.util
import json
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import importlib_metadata

from mas.runtime.errors import MasError

log = logging.getLogger(__name__)

LITELLM_MAP_FILE = "model_prices_and_context_window_backup.json"
"""LiteLLM's bundled copy of its model map, inside the installed ``litellm`` package."""

_PER_MILLION = 1_000_000


class CatalogError(MasError, ValueError):
    """A catalog file or pricing block is malformed; the message names the field."""


@dataclass(frozen=True)
class Pricing:
    """Per-million-token prices of one model (USD).

    Rates from LiteLLM's map keep the map key in ``litellm_key``: the cost of a call is
    then computed by LiteLLM's own cost logic (cache-write premiums, tiers above a prompt
    size). Other rates use spec 003's formula (see :func:`mas.runtime.engine.call_cost`).

    :ivar input_per_million: uncached input tokens.
    :ivar cached_input_per_million: provider prefix-cache reads; ``None`` when unknown.
    :ivar output_per_million: output tokens.
    :ivar as_of: date (ISO) the rates were recorded, ``None`` when the source has none.
    :ivar source: where the rates come from (catalog, LiteLLM map, infra override).
    :ivar cache_write_per_million: provider prefix-cache writes (Anthropic charges a
        premium); ``None`` when unknown.
    :ivar litellm_key: the LiteLLM map key the rates were read from, ``None`` otherwise.
    """

    input_per_million: float
    cached_input_per_million: float | None
    output_per_million: float
    as_of: str | None
    source: str
    cache_write_per_million: float | None = None
    litellm_key: str | None = None

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any], *, source: str, where: str) -> Pricing:
        """Read a pricing block with spec 003's field names.

        Fields: ``input_per_million_tokens``, ``cached_input_per_million_tokens`` (optional),
        ``cache_write_per_million_tokens`` (optional), ``output_per_million_tokens``;
        ``as_of`` is kept when present.

        :param where: the field path, for error messages.
        :raises CatalogError: a rate is missing, not a number, or negative.
        """
        unknown = sorted(set(raw) - set(PRICING_FIELDS))
        if unknown:
            raise CatalogError(
                f"{where}.{unknown[0]}: unknown field; allowed: {', '.join(PRICING_FIELDS)}"
            )
        as_of = raw.get("as_of")
        return cls(
            input_per_million=_required_rate(raw, "input_per_million_tokens", where),
            cached_input_per_million=_rate(raw, "cached_input_per_million_tokens", where),
            output_per_million=_required_rate(raw, "output_per_million_tokens", where),
            as_of=str(as_of) if as_of is not None else None,
            source=source,
            cache_write_per_million=_rate(raw, "cache_write_per_million_tokens", where),
        )


    def to_dict(self) -> dict[str, Any]:
        """The rates under the manifest's field names, with ``as_of``, ``source`` and
        ``cost_logic`` (``litellm`` when LiteLLM's cost logic prices a call, else ``rates``).
        """
        return {
            "input_per_million_tokens": self.input_per_million,
            "cached_input_per_million_tokens": self.cached_input_per_million,
            "cache_write_per_million_tokens": self.cache_write_per_million,
            "output_per_million_tokens": self.output_per_million,
            "as_of": self.as_of,
            "source": self.source,
            "cost_logic": "litellm" if self.litellm_key is not None else "rates",
        }


PRICING_FIELDS = (
    "input_per_million_tokens",
    "cached_input_per_million_tokens",
    "cache_write_per_million_tokens",
    "output_per_million_tokens",
    "as_of",
)
"""Keys a pricing block may have."""


def _rate(raw: Mapping[str, Any], name: str, where: str) -> float | None:
    value = raw.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise CatalogError(f"{where}.{name}: must be a non-negative number (got {value!r})")
    return float(value)


def _required_rate(raw: Mapping[str, Any], name: str, where: str) -> float:
    value = _rate(raw, name, where)
    if value is None:
        raise CatalogError(f"{where}.{name}: required rate is missing")
    return value


@dataclass(frozen=True)
class CatalogEntry:
    """What the catalog knows about one model.

    :ivar model: the key that matched (after prefix stripping).
    :ivar context_window: maximum input tokens, ``None`` when unknown.
    :ivar pricing: rates, ``None`` when unknown; they carry their own ``source``.
    :ivar source: where the window came from (where the entry came from when it has no
        window): ``litellm-map <version>`` or ``catalog <as_of>`` for an override.
    """

    model: str
    context_window: int | None
    pricing: Pricing | None
    source: str


def lookup_keys(model: str) -> Iterator[str]:
    """``model`` as written, then with each leading ``provider/`` segment removed in turn."""
    key = model.strip()
    while key:
        yield key
        _, slash, rest = key.partition("/")
        key = rest if slash else ""


class Catalog:
    """Windows and prices by model string: a primary source, then dated overrides on top.

    :param overrides: entries that win over the primary source for each field they set.
    :param primary: looks up one key in the primary source; :func:`default_catalog` uses
        LiteLLM's bundled map, read lazily on first use. ``None``: overrides only.
    """

    def __init__(
        self,
        overrides: Mapping[str, CatalogEntry],
        *,
        primary: Callable[[str], CatalogEntry | None] | None = None,
    ) -> None:
        self.overrides = dict(overrides)
        self.primary = primary

    def lookup(self, model: str) -> CatalogEntry | None:
        """The entry for ``model``: the primary source's, with an override's fields on top.

        Each source is asked at every key of :func:`lookup_keys`, most specific first.
        """
        keys = list(lookup_keys(model))
        own = next((self.overrides[key] for key in keys if key in self.overrides), None)
        base = None
        if self.primary is not None:
            base = next((e for e in map(self.primary, keys) if e is not None), None)
        if own is None or base is None:
            return own or base
        window_from_own = own.context_window is not None
        return CatalogEntry(
            own.model,
            own.context_window if window_from_own else base.context_window,
            own.pricing if own.pricing is not None else base.pricing,
            own.source if window_from_own else base.source,
        )

    def context_window(self, model: str) -> int | None:
        """Maximum input tokens of ``model``, ``None`` when unknown."""
        entry = self.lookup(model)
        return entry.context_window if entry is not None else None

    def pricing(self, model: str) -> Pricing | None:
        """Per-million rates of ``model``, ``None`` when unknown."""
        entry = self.lookup(model)
        return entry.pricing if entry is not None else None


ENTRY_FIELDS = ("context_window", "pricing", "as_of", "reference")
"""Keys an override may have (``reference`` says where the numbers were read and why)."""


def parse_catalog(data: Any, where: str = "catalog.json") -> dict[str, CatalogEntry]:
    """Overrides of a catalog document ``{"models": {key: {context_window, pricing, as_of}}}``.

    Every override is dated: ``as_of`` (the day its numbers were checked) is required.

    :raises CatalogError: the document or an entry is malformed.
    """
    models = data.get("models") if isinstance(data, dict) else None
    if not isinstance(models, dict):
        raise CatalogError(f"{where}: 'models' must be a mapping of model key to entry")
    return {key: _parse_entry(key, raw, f"{where}: models.{key}") for key, raw in models.items()}


def _parse_entry(key: str, raw: Any, at: str) -> CatalogEntry:
    if not isinstance(raw, dict):
        raise CatalogError(f"{at}: must be a mapping (got {raw!r})")
    unknown = sorted(set(raw) - set(ENTRY_FIELDS))
    if unknown:
        raise CatalogError(f"{at}.{unknown[0]}: unknown field; allowed: {', '.join(ENTRY_FIELDS)}")
    as_of = raw.get("as_of")
    if not isinstance(as_of, str) or not as_of:
        raise CatalogError(f"{at}.as_of: required date the override was checked (got {as_of!r})")
    source = f"catalog {as_of}"
    window = raw.get("context_window")
    bad_window = isinstance(window, bool) or not isinstance(window, int) or window <= 0
    if window is not None and bad_window:
        raise CatalogError(f"{at}.context_window: must be a positive integer (got {window!r})")
    block = raw.get("pricing")
    pricing = None
    if block is not None:
        if not isinstance(block, dict):
            raise CatalogError(f"{at}.pricing: must be a mapping (got {block!r})")
        with_date = {"as_of": as_of, **block}
        pricing = Pricing.from_mapping(with_date, source=source, where=f"{at}.pricing")
    return CatalogEntry(key, window, pricing, source)


@lru_cache(maxsize=1)
def builtin_entries() -> dict[str, CatalogEntry]:
    """The kernel's overrides, ``data/catalog.json``, parsed once per process."""
    text = resources.files("mas.runtime").joinpath("data", "catalog.json").read_text("utf-8")
    return parse_catalog(json.loads(text))


def litellm_map_path() -> Path | None:
    """Where the installed litellm keeps its bundled model map, without importing litellm."""
    spec = importlib.util.find_spec("litellm")
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        path = Path(location) / LITELLM_MAP_FILE
        if path.is_file():
            return path
    return None


def _litellm_version() -> str:
    try:
        return importlib_metadata.version("litellm")
    except importlib_metadata.PackageNotFoundError:
        return "unknown"


@lru_cache(maxsize=1)
def litellm_map() -> dict[str, Any]:
    """LiteLLM's bundled model map as plain JSON (empty when litellm is not installed)."""
    path = litellm_map_path()
    if path is None:
        return {}
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        log.warning("cannot read LiteLLM model map %s: %s", path, exc)
        return {}
    return data if isinstance(data, dict) else {}


def litellm_provider(model: str) -> str | None:
    """The LiteLLM provider ``model`` is sent to: its ``provider/`` prefix, else the
    ``litellm_provider`` LiteLLM's map gives a bare name (``gpt-4o``: ``openai``);
    ``None`` when neither says."""
    prefix, slash, _ = model.partition("/")
    if slash:
        return prefix
    record = litellm_map().get(model)
    found = record.get("litellm_provider") if isinstance(record, dict) else None
    return str(found) if found else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return None
    return float(value)


_LITELLM_RATES = (
    "input_cost_per_token",
    "cache_read_input_token_cost",
    "output_cost_per_token",
    "cache_creation_input_token_cost",
)


def entry_from_litellm(key: str, raw: Any, version: str) -> CatalogEntry | None:
    """A catalog entry from one LiteLLM map record (per-token costs scaled to per million).

    The entry's pricing keeps ``key``, so that a call's cost goes through LiteLLM's own
    cost logic, which also knows the record's tiers and premiums.
    """
    if not isinstance(raw, dict):
        return None
    window_tokens = _number(raw.get("max_input_tokens"))
    window = int(window_tokens) if window_tokens else None
    source = f"litellm-map {version}"
    rates = [_number(raw.get(name)) for name in _LITELLM_RATES]
    per_million = [rate * _PER_MILLION if rate is not None else None for rate in rates]
    pricing = None
    if per_million[0] is not None and per_million[2] is not None:
        pricing = Pricing(
            per_million[0], per_million[1], per_million[2], None, source,
            cache_write_per_million=per_million[3], litellm_key=key,
        )
    if window is None and pricing is None:
        return None
    return CatalogEntry(key, window, pricing, source)


def litellm_lookup(key: str) -> CatalogEntry | None:
    """Look ``key`` up in LiteLLM's bundled map (loaded on first use)."""
    data = litellm_map()
    return entry_from_litellm(key, data.get(key), _litellm_version()) if key in data else None


@lru_cache(maxsize=1)
def default_catalog() -> Catalog:
    """LiteLLM's bundled map with the kernel's dated overrides on top (one per process)."""
    return Catalog(builtin_entries(), primary=litellm_lookup)


__all__ = [
    "Catalog",
    "CatalogEntry",
    "CatalogError",
    "Pricing",
    "default_catalog",
    "lookup_keys",
    "parse_catalog",
]
