"""The local model catalog: input windows and per-million-token prices, never fetched.

Entries come from ``data/catalog.json`` (dated, shipped with the kernel). A model string
is looked up as written, then with its provider prefixes stripped one at a time
(``vertex_ai/gemini-2.5-flash`` -> ``gemini-2.5-flash``). On a miss, LiteLLM's bundled
model map is read as a JSON file — litellm itself is not imported — once per process.
Infra ``generation.context_window`` / ``generation.pricing`` override what is found here
(see :mod:`mas.runtime.spec.windows`).
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

    Cost of a live call (spec 003) = uncached input x ``input_per_million`` + cached input x
    ``cached_input_per_million`` + output x ``output_per_million``, each divided by 10^6.

    :ivar input_per_million: uncached input tokens.
    :ivar cached_input_per_million: provider prefix-cache reads; ``None`` when unknown.
    :ivar output_per_million: output tokens.
    :ivar as_of: date (ISO) the rates were recorded, ``None`` when the source has none.
    :ivar source: where the rates come from (catalog, LiteLLM map, infra override).
    """

    input_per_million: float
    cached_input_per_million: float | None
    output_per_million: float
    as_of: str | None
    source: str

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any], *, source: str, where: str) -> Pricing:
        """Read a pricing block with spec 003's field names.

        Fields: ``input_per_million_tokens``, ``cached_input_per_million_tokens`` (optional),
        ``output_per_million_tokens``; ``as_of`` is kept when present.

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
        )


PRICING_FIELDS = (
    "input_per_million_tokens",
    "cached_input_per_million_tokens",
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
    :ivar pricing: rates, ``None`` when unknown.
    :ivar source: ``catalog`` for the kernel's file, ``litellm-map <version>`` for the fallback.
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
    """Windows and prices by model string, with LiteLLM's bundled map as the fallback.

    :param entries: the catalog's own entries by model key.
    :param fallback: looks up one key in a secondary source; by default LiteLLM's bundled
        map, read lazily on the first miss. Pass ``None`` for no fallback.
    """

    def __init__(
        self,
        entries: Mapping[str, CatalogEntry],
        *,
        fallback: Callable[[str], CatalogEntry | None] | None = None,
    ) -> None:
        self.entries = dict(entries)
        self.fallback = fallback

    def lookup(self, model: str) -> CatalogEntry | None:
        """The entry for ``model``: own entries by every key first, then the fallback."""
        keys = list(lookup_keys(model))
        for key in keys:
            if key in self.entries:
                return self.entries[key]
        if self.fallback is not None:
            for key in keys:
                entry = self.fallback(key)
                if entry is not None:
                    return entry
        return None

    def context_window(self, model: str) -> int | None:
        """Maximum input tokens of ``model``, ``None`` when unknown."""
        entry = self.lookup(model)
        return entry.context_window if entry is not None else None

    def pricing(self, model: str) -> Pricing | None:
        """Per-million rates of ``model``, ``None`` when unknown."""
        entry = self.lookup(model)
        return entry.pricing if entry is not None else None


ENTRY_FIELDS = ("context_window", "pricing", "as_of", "reference")
"""Keys a catalog entry may have (``reference`` names where the numbers were read)."""


def parse_catalog(data: Any, where: str = "catalog.json") -> dict[str, CatalogEntry]:
    """Entries of a catalog document ``{"models": {key: {context_window, pricing, as_of}}}``.

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
    window = raw.get("context_window")
    bad_window = isinstance(window, bool) or not isinstance(window, int) or window <= 0
    if window is not None and bad_window:
        raise CatalogError(f"{at}.context_window: must be a positive integer (got {window!r})")
    block = raw.get("pricing")
    pricing = None
    if block is not None:
        if not isinstance(block, dict):
            raise CatalogError(f"{at}.pricing: must be a mapping (got {block!r})")
        with_date = {"as_of": raw["as_of"], **block} if "as_of" in raw else block
        pricing = Pricing.from_mapping(with_date, source="catalog", where=f"{at}.pricing")
    return CatalogEntry(key, window, pricing, "catalog")


@lru_cache(maxsize=1)
def builtin_entries() -> dict[str, CatalogEntry]:
    """The kernel's ``data/catalog.json``, parsed once per process."""
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


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return None
    return float(value)


def entry_from_litellm(key: str, raw: Any, version: str) -> CatalogEntry | None:
    """A catalog entry from one LiteLLM map record (per-token costs scaled to per million)."""
    if not isinstance(raw, dict):
        return None
    window_tokens = _number(raw.get("max_input_tokens"))
    window = int(window_tokens) if window_tokens else None
    source = f"litellm-map {version}"
    rates = [_number(raw.get(name)) for name in
             ("input_cost_per_token", "cache_read_input_token_cost", "output_cost_per_token")]
    pricing = None
    if rates[0] is not None and rates[2] is not None:
        cached = rates[1] * _PER_MILLION if rates[1] is not None else None
        pricing = Pricing(rates[0] * _PER_MILLION, cached, rates[2] * _PER_MILLION, None, source)
    if window is None and pricing is None:
        return None
    return CatalogEntry(key, window, pricing, source)


def litellm_lookup(key: str) -> CatalogEntry | None:
    """Look ``key`` up in LiteLLM's bundled map (loaded on first use)."""
    data = litellm_map()
    return entry_from_litellm(key, data.get(key), _litellm_version()) if key in data else None


@lru_cache(maxsize=1)
def default_catalog() -> Catalog:
    """The kernel catalog with LiteLLM's bundled map as fallback (one per process)."""
    return Catalog(builtin_entries(), fallback=litellm_lookup)


__all__ = [
    "Catalog",
    "CatalogEntry",
    "CatalogError",
    "Pricing",
    "default_catalog",
    "lookup_keys",
    "parse_catalog",
]
