"""The usage ledger as JSON data, so a resumed session keeps its budget and cost."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from mas.runtime.engine import LayerCounts, UsageLedger
from mas.runtime.protocols import Usage


def ledger_to_state(ledger: UsageLedger) -> dict[str, Any]:
    """Every counter of ``ledger`` as plain JSON data."""
    return asdict(ledger)


def ledger_from_state(state: dict[str, Any]) -> UsageLedger:
    """The ledger :func:`ledger_to_state` saved."""
    data = dict(state)
    usage = data.pop("last_usage", None)
    layers = data.pop("layers", {})
    return UsageLedger(
        **data,
        last_usage=Usage(**usage) if usage else None,
        layers={name: LayerCounts(**counts) for name, counts in layers.items()},
    )
