"""``backend: mce``: MCE's own metric classes, in their own venv, judged through our engine.

``metrics-computation-engine`` pins ``litellm<1.75`` and cannot be installed beside the
kernel, so it lives in ``.venv-mce`` (``make mce-venv``) and runs as a worker process
(:mod:`mas.library.eval.mce.mce_worker`) that this module drives over a pipe. For each
session the parent sends the run as MCE span rows (:mod:`mas.library.eval.mce.spans`);
the worker builds MCE's ``SessionEntity`` and runs the stock metrics; each of their judge
calls comes back here as a request built from MCE's prompt, is voted on by the jury (panel,
samples, response cache, cost ledger, key masking: the same engine as ``native``) and
answered with the aggregated verdict. The worker gets no API key in its environment and
never opens a connection.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

from mas.library.eval.mce._parse import parse_verdict
from mas.library.eval.mce._prompt import verify_evidence
from mas.library.eval.mce.jury import Jury, aggregate
from mas.library.eval.mce.spans import otel_rows
from mas.library.eval.metrics.base import JudgeMetric, MetricResult
from mas.library.eval.run import SessionRun
from mas.runtime.errors import MasError, ModelCallError
from mas.runtime.protocols import Message

log = logging.getLogger(__name__)

WORKER = Path(__file__).with_name("mce_worker.py")
PYTHON_ENV = "MAS_MCE_PYTHON"
VENV = ".venv-mce"
BACKEND_ENV = "MAS_EVAL_BACKEND"
"""The backend where ``eval_mce.config.backend`` is ``auto`` (its default): native, mce or auto."""
BACKENDS = ("auto", "native", "mce")
SCORE_KEYS = ("metric_score", "score")
REASONING_KEYS = ("score_reasoning", "reasoning")
_SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")


class MceBackendError(MasError):
    """The MCE venv is missing or the worker failed; the message says what to do."""


class MceWorkerError(MceBackendError, ModelCallError):
    """The worker died or failed mid-way: a tool failure, not bad input (mas-ctl exits 4,
    as for a failed model call, where a missing venv exits 2)."""


def find_python(configured: str | None = None, *, start: Path | None = None) -> Path:
    """The Python of the MCE venv: ``configured``, else ``$MAS_MCE_PYTHON``, else
    ``.venv-mce/bin/python`` in the current directory or the nearest parent holding one.

    :raises MceBackendError: none of them exists.
    """
    found = locate_python(configured, start=start)
    if found is None:
        here = (start or Path.cwd()).resolve()
        raise MceBackendError(f"backend mce: no {VENV}/bin/python in {here} or its parents; "
                              f"run `make mce-venv` there, or set {PYTHON_ENV} to the Python "
                              "of a venv holding metrics-computation-engine and "
                              "mce-metrics-plugin")
    return found


def locate_python(configured: str | None = None, *, start: Path | None = None) -> Path | None:
    """Like :func:`find_python`, but ``None`` when no venv is found by searching.

    :raises MceBackendError: ``configured`` or ``$MAS_MCE_PYTHON`` names no file (a path the
        user gave is never passed over silently).
    """
    explicit = configured or os.environ.get(PYTHON_ENV)
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            source = "eval_mce.config.mce_python" if configured else PYTHON_ENV
            raise MceBackendError(f"{source}: no such Python: {explicit}")
        return path
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / VENV / "bin" / "python"
        if candidate.is_file():
            return candidate
    return None


@dataclass(frozen=True)
class BackendChoice:
    """Who computes the stock judge ids in one scoring pass, and why.

    :ivar name: ``mce`` (MCE's own metric classes) or ``native`` (mas-lab's rubrics).
    :ivar reason: what decided it, in a few words (printed and stored as ``backend_reason``).
    :ivar python: the MCE venv's Python, for ``mce``.
    :ivar auto: nobody named a backend: ``mce`` because its venv was found, or ``native``
        because it was not (a fallback, which is said, never silent).
    """

    name: Literal["native", "mce"]
    reason: str
    python: Path | None = None
    auto: bool = False


def choose_backend(configured: str, mce_python: str | None = None, *,
                   start: Path | None = None) -> BackendChoice:
    """Resolve ``backend``: a named one wins (``configured``, else ``$MAS_EVAL_BACKEND``);
    ``auto`` is MCE's own implementation when its venv is found (:func:`locate_python`),
    else native.

    :raises MceBackendError: ``mce`` named with no venv to be found, a bad
        ``$MAS_EVAL_BACKEND``, or a configured Python that does not exist.
    """
    asked, source = configured, f"backend: {configured}"
    if asked == "auto" and (variable := os.environ.get(BACKEND_ENV, "").strip()):
        if variable not in BACKENDS:
            raise MceBackendError(f"{BACKEND_ENV}: must be one of {', '.join(BACKENDS)} "
                                  f"(got {variable!r})")
        asked, source = variable, f"{BACKEND_ENV}={variable}"
    if asked == "native":
        return BackendChoice("native", source)
    if asked == "mce":
        return BackendChoice("mce", source, find_python(mce_python, start=start))
    python = locate_python(mce_python, start=start)
    if python is None:
        return BackendChoice("native", f"no {VENV} here or above, nor ${PYTHON_ENV}",
                             auto=True)
    return BackendChoice("mce", f"auto: {python}", python, auto=True)


def _clean_env() -> dict[str, str]:
    """The worker's environment: ours without anything that looks like a credential."""
    env = {k: v for k, v in os.environ.items()
           if not any(marker in k.upper() for marker in _SECRET_MARKERS)}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    env["PYTHONUNBUFFERED"] = "1"
    return env


class MceWorker:
    """One worker process. Use as a context manager; :meth:`close` stops it."""

    def __init__(self, python: Path) -> None:
        self.python = python
        # MCE's metrics print whole sessions; a file, not a pipe, so it can never fill up.
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        try:
            self._process = subprocess.Popen(
                [str(python), str(WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=self._stderr, env=_clean_env(), text=True, encoding="utf-8")
        except OSError as exc:
            raise MceBackendError(f"backend mce: cannot start {python}: {exc}") from None
        ready = self.call({"op": "hello"})
        self.versions: dict[str, str] = ready.get("versions") or {}
        self.metrics: list[str] = ready.get("metrics") or []

    def __enter__(self) -> MceWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def mce_version(self) -> str:
        """``metrics-computation-engine`` version in the worker's venv."""
        return self.versions.get("metrics-computation-engine", "unknown")

    def send(self, message: dict[str, Any]) -> None:
        """Write one request line."""
        assert self._process.stdin is not None
        try:
            self._process.stdin.write(json.dumps(message, default=str) + "\n")
            self._process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._died() from None

    def receive(self) -> dict[str, Any]:
        """Read one reply line; a worker-side error becomes :class:`MceBackendError`."""
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            raise self._died()
        reply: dict[str, Any] = json.loads(line)
        if reply.get("op") == "error":
            raise MceWorkerError(f"MCE worker: {reply.get('error')}")
        return reply

    def call(self, message: dict[str, Any]) -> dict[str, Any]:
        """One request, one reply (ops without judge calls)."""
        self.send(message)
        return self.receive()

    def _died(self) -> MceWorkerError:
        # The pipe closes a moment before the process is reaped: wait for its exit code.
        try:
            self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._stderr.seek(0)
        tail = self._stderr.read().decode("utf-8", "replace").strip().splitlines()[-3:]
        return MceWorkerError(f"MCE worker ({self.python}) exited with code "
                               f"{self._process.returncode}: {' | '.join(tail) or 'no output'}")

    def close(self) -> None:
        """Close the pipe and wait for the worker (killed after 10 s)."""
        if self._process.stdin is not None and not self._process.stdin.closed:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()
        self._stderr.close()

    def score(self, run: SessionRun, metrics: list[JudgeMetric],
              jury: Jury) -> dict[str, MetricResult]:
        """Score ``run`` on ``metrics`` with MCE's classes; every judge call goes to ``jury``."""
        by_id = {metric.id: metric for metric in metrics}
        judged: dict[str, MetricResult] = {}
        self.send({"op": "score", "metrics": list(by_id),
                   "rows": otel_rows(run, max_tool_chars=jury.max_tool_chars)})
        while True:
            reply = self.receive()
            if reply.get("op") != "judge":
                break
            metric = by_id[reply["metric"]]
            result = self._judge(metric, reply["messages"], jury)
            judged[metric.id] = result
            if result.value is None:
                self.send({"op": "verdict", "error": result.error})
            else:
                self.send({"op": "verdict", "score": result.value, "reasoning": result.reasoning})
        return {metric_id: self._result(metric_id, outcome, judged.get(metric_id))
                for metric_id, outcome in (reply.get("results") or {}).items()}

    def _judge(self, metric: JudgeMetric, messages: list[Message], jury: Jury) -> MetricResult:
        votes = jury.vote_on(
            messages,
            lambda text: parse_verdict(text, metric.unit, score_keys=SCORE_KEYS,
                                       reasoning_keys=REASONING_KEYS),
            _reask)
        for vote in votes:
            vote.evidence_verified = verify_evidence(vote.evidence, messages[-1]["content"])
        result = aggregate(metric, votes, jury.judges)
        # The request is MCE's prompt with this session in it: hash what was sent.
        result.detail["prompt_sha256"] = hashlib.sha256(
            json.dumps(messages, sort_keys=True).encode()).hexdigest()
        return result

    def _result(self, metric_id: str, outcome: dict[str, Any],
                judged: MetricResult | None) -> MetricResult:
        record = {**(judged.detail if judged else {}), "backend": "mce",
                  "mce_version": self.mce_version,
                  "mce_metrics_plugin_version": self.versions.get("mce-metrics-plugin"),
                  "judge_calls": outcome.get("judge_calls", 0)}
        value = outcome.get("value")
        if value is None:
            # The jury's own reason (e.g. too many unscored votes) reads the same as native.
            reason = judged.error if judged is not None and judged.value is None else \
                f"MCE {metric_id}: {outcome.get('error')}"
            return MetricResult(None, error=reason, detail=record)
        return MetricResult(float(value), str(outcome.get("reasoning") or ""), detail=record)


def _reask(first: list[Message], reply: str, problem: str) -> list[Message]:
    """MCE's request again, with the unusable reply and what was wrong with it."""
    return [*first, {"role": "assistant", "content": reply},
            {"role": "user", "content": f"Your reply could not be used: {problem}. Reply again "
             "with only a JSON object with the fields score_reasoning and metric_score."}]
