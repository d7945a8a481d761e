"""``metrics.json``: one file per session run, holding every metric id scored on it.

The format is documented by the JSON Schema shipped as ``data/metrics.schema.json``
(:func:`schema`). Files are written atomically, so a crash never leaves half a file, and a
re-score merges into what is already there.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from mas.library.eval.metrics.base import Direction, MetricResult
from mas.library.eval.run import METRICS, RunFolderError, SessionRun
from mas.runtime.errors import StorageError
from mas.runtime.paths import MAX_RUN_FILE_BYTES, UnreadableFileError, read_regular
from mas.runtime.secrets import mask


class MetricsFileError(RunFolderError):
    """A run folder's ``metrics.json`` exists but is not a metrics file."""


SCHEMA_ID = "https://mas-lab.dev/schemas/metrics.schema.json"
FORMAT = "mas-lab/metrics/v1"


def schema() -> dict[str, Any]:
    """The JSON Schema of ``metrics.json`` (draft 2020-12)."""
    text = resources.files("mas.library.eval").joinpath("data", "metrics.schema.json")
    loaded: dict[str, Any] = json.loads(text.read_text("utf-8"))
    return loaded


@dataclass
class ScoredMetric:
    """A metric result with the id and kind it is filed under, and which way is better."""

    id: str
    kind: str
    result: MetricResult
    better: Direction = "higher"

    def to_json(self) -> dict[str, Any]:
        """The per-id record of ``metrics.json``."""
        return {
            "status": self.result.status,
            "value": self.result.value,
            "reasoning": self.result.reasoning,
            "error": self.result.error,
            "kind": self.kind,
            "better": self.better,
            "detail": self.result.detail,
        }


@dataclass
class MetricsFile:
    """The contents of one ``metrics.json``."""

    session_id: str
    agent: str = ""
    model: str = ""
    judge: dict[str, Any] | None = None
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def read(cls, run: SessionRun) -> MetricsFile | None:
        """The run's existing ``metrics.json``, or ``None`` when it has none.

        :raises MetricsFileError: the file exists but is not a metrics file.
        """
        path = run.path / METRICS
        if not path.is_file():
            return None
        try:
            data = json.loads(read_regular(path, MAX_RUN_FILE_BYTES).decode("utf-8"))
            return cls(
                session_id=data["session_id"], agent=data.get("agent", ""),
                model=data.get("model", ""), judge=data.get("judge"),
                metrics={str(k): _record(v) for k, v in data["metrics"].items()},
                warnings=[w for w in data.get("run_quality", {}).get("warnings", [])
                          if not w.startswith("not applicable: ")],
            )
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError, ValueError,
                UnreadableFileError) as exc:
            raise MetricsFileError(
                f"{path}: not a metrics file ({type(exc).__name__}: {exc}); --overwrite replaces it"
            ) from None

    def add(self, scored: ScoredMetric) -> None:
        """File (or replace) one metric."""
        self.metrics[scored.id] = scored.to_json()

    def run_quality(self) -> dict[str, Any]:
        """``ok`` (every applicable id scored), ``partial`` or ``unscored``, with the why.

        Ids that do not apply to the run are warnings, not errors.
        """
        by_status: dict[str, list[str]] = {"scored": [], "unscored": [], "not_applicable": []}
        for mid, rec in self.metrics.items():
            by_status[rec["status"]].append(f"{mid}: {rec['error']}")
        errors = by_status["unscored"]
        status = "ok" if not errors else ("partial" if by_status["scored"] else "unscored")
        warnings = [*self.warnings, *(f"not applicable: {w}" for w in by_status["not_applicable"])]
        return {"status": status, "warnings": list(dict.fromkeys(warnings)), "errors": errors}

    def to_json(self) -> dict[str, Any]:
        """The whole document."""
        return {
            "$schema": SCHEMA_ID,
            "format": FORMAT,
            "session_id": self.session_id,
            "agent": self.agent,
            "model": self.model,
            "judge": self.judge,
            "metrics": dict(sorted(self.metrics.items())),
            "run_quality": self.run_quality(),
        }

    def write(self, folder: Path) -> Path:
        """Write atomically to ``folder/metrics.json``; returns the path."""
        target = folder / METRICS
        fd, tmp = tempfile.mkstemp(prefix=".metrics-", suffix=".json", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                # A judge error may quote a key: nothing stored holds one.
                handle.write(mask(json.dumps(self.to_json(), indent=2, default=str)) + "\n")
            os.replace(tmp, target)
        except BaseException as exc:
            Path(tmp).unlink(missing_ok=True)
            if isinstance(exc, OSError):
                raise StorageError.writing(target, exc) from exc
            raise
        return target


def _record(raw: Any) -> dict[str, Any]:
    # Files written before per-id status existed derive it from the value.
    if not isinstance(raw, dict) or "value" not in raw:
        raise ValueError(f"metric record without a value: {raw!r:.60}")
    record = {"status": "scored" if raw["value"] is not None else "unscored", "reasoning": "",
              "error": None, "kind": "computed", "detail": {}, **raw}
    return record
