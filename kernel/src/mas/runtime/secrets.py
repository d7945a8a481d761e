"""Keys never leave the process in clear, and provider errors are stored without content.

Every text that is stored, logged or printed goes through :func:`mask`, which replaces
every key the process can see:

- the value of every environment variable whose name says it holds a credential
  (``*_API_KEY``, ``*APIKEY``, ``*_KEY``, ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``,
  ``*CREDENTIAL*``): this covers every provider variable LiteLLM reads
  (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``AWS_SECRET_ACCESS_KEY``, ``HF_TOKEN``, …);
- the value of every variable an Infra names in ``generation.api_key_env``
  (:func:`watch_env`), whatever its name.

A value of :data:`MIN_LENGTH` characters or more is replaced wherever it occurs; a shorter
one (from :data:`MIN_TOKEN_LENGTH`) only where it stands alone as a word, so that a short
value never mangles ordinary text; shorter values are not keys and are left alone.

A key is also replaced in every form it takes once written down (:func:`key_forms`): JSON
escapes a ``"`` or ``\\`` in it (``transcript.json``, ``session.json``, a JSON line that
holds JSON), and ``repr`` does the same; the raw value is not in such text, its escaped
form is.

Provider error text may quote the prompt. :func:`error_fields` reduces an exception to
kind, HTTP status and a bounded, masked message made only of the exception's type and
status, never the provider's words; :func:`content_free` does the same for a string
already formatted as ``Type: message``.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

MASK = "***"
"""What a key is replaced with."""

MIN_LENGTH = 8
"""Values at least this long are masked wherever they occur."""

MIN_TOKEN_LENGTH = 4
"""Shorter values are masked only as whole words; below this length not at all."""

MAX_MESSAGE = 200
"""Longest stored error message (characters)."""

_SECRET_NAME = re.compile(r"API_?KEY|_KEY$|^KEY$|TOKEN|SECRET|PASSW(OR)?D|CREDENTIAL", re.I)
# Provider error text is untrusted: one run of white space may be read once, not split
# between two ``\s*`` every possible way (quadratic; issue 26, item 1).
_STATUS = re.compile(
    r"(?:status(?:[ _]?code)?|error code|http)\s*(?:[:=]\s*)?([1-5]\d\d)\b", re.IGNORECASE
)
# Only a name shaped like an exception type is kept: any other leading word may be prompt text.
_TYPE_NAME = re.compile(
    r"^\s*(?:[A-Za-z_]\w*\.)*([A-Za-z_]\w*(?:Error|Exception|Timeout|Interrupt))\s*:"
)
_WATCHED: set[str] = set()
_WATCHED_LOCK = threading.Lock()


def watch_env(name: str) -> None:
    """Also mask the value of environment variable ``name`` (an Infra's ``api_key_env``).

    The set is process-wide on purpose: a key read once must stay masked in every later
    text of the process, whichever runtime wrote it.
    """
    with _WATCHED_LOCK:
        _WATCHED.add(name)


def secret_values(environ: dict[str, str] | None = None) -> list[str]:
    """Every key value the process can see, longest first (so a key inside another goes
    after it)."""
    env = os.environ if environ is None else environ
    with _WATCHED_LOCK:
        watched = set(_WATCHED)
    values = {
        value.strip()
        for name, value in env.items()
        if name in watched or _SECRET_NAME.search(name)
    }
    return sorted((v for v in values if len(v) >= MIN_TOKEN_LENGTH), key=len, reverse=True)


@lru_cache(maxsize=256)  # mask runs on every stored text; a key's forms never change
def key_forms(secret: str) -> tuple[str, ...]:
    """Every form ``secret`` takes in stored or printed text, longest first: itself, its
    JSON-escaped form (ASCII-only and not), the same escaped once more (JSON inside a JSON
    string, as an event line quoting a stored file) and its ``repr``."""
    once = [json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]]
    twice = [json.dumps(form)[1:-1] for form in once]
    # ``repr`` quotes with ' unless only " is safe; in a longer text holding both quotes it
    # escapes the ' instead: both spellings.
    reprs = [repr(secret)[1:-1], repr(secret + "'\"")[1:-4]]
    forms = {secret, *reprs, *once, *twice}
    return tuple(sorted(forms, key=len, reverse=True))


def mask(text: str, secrets: Iterable[str] | None = None) -> str:
    """``text`` with every key, in each of its :func:`key_forms`, replaced by :data:`MASK`
    (see the module docstring).

    :param secrets: the values to mask (default: :func:`secret_values`).
    """
    if not text:
        return text
    for secret in secret_values() if secrets is None else secrets:
        # The rule (anywhere, or as a word) is the key's own length's, whatever the form's.
        for form in key_forms(secret):
            if len(secret) >= MIN_LENGTH:
                text = text.replace(form, MASK)
            elif len(secret) >= MIN_TOKEN_LENGTH and form in text:
                pattern = rf"(?<![\w-]){re.escape(form)}(?![\w-])"
                text = re.sub(pattern, MASK, text)
    return text


def mask_data(data: Any, secrets: Iterable[str] | None = None) -> Any:
    """``data`` (JSON-like: dicts, lists, strings) with every string masked."""
    values = list(secret_values() if secrets is None else secrets)
    if not values:
        return data
    if isinstance(data, str):
        return mask(data, values)
    if isinstance(data, dict):
        return {mask_data(k, values): mask_data(v, values) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [mask_data(item, values) for item in data]
    return data


def status_of(exc: BaseException) -> int | None:
    """The HTTP status behind ``exc``: a ``status``/``status_code`` attribute anywhere on
    its chain of causes, else one written in its message; ``None`` when there is none."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        for attribute in ("status", "status_code"):
            value = getattr(current, attribute, None)
            if isinstance(value, int) and 100 <= value <= 599:
                return value
        current = current.__cause__ or current.__context__
    found = _STATUS.search(str(exc))
    return int(found.group(1)) if found else None


def error_kind(name: str, status: int | None) -> str:
    """A short category for an error: from its HTTP status, else from its type name."""
    by_status = {400: "bad_request", 401: "authentication", 403: "authentication",
                 404: "not_found", 408: "timeout", 413: "too_large", 429: "rate_limit"}
    if status in by_status:
        return by_status[status]
    if status is not None and status >= 500:
        return "server"
    lowered = name.lower()
    for word, kind in (("timeout", "timeout"), ("connection", "connection"),
                       ("auth", "authentication"), ("ratelimit", "rate_limit"),
                       ("budget", "budget")):
        if word in lowered:
            return kind
    return "exception"


def content_free(name: str, status: int | None) -> str:
    """The stored form of an error: its type, kind and status, no provider words."""
    kind = error_kind(name, status)
    where = f" (HTTP {status})" if status is not None else ""
    return mask(f"{name}: {kind}{where}; the provider's message is not stored")[:MAX_MESSAGE]


def error_fields(exc: BaseException) -> dict[str, Any]:
    """``{"error_kind", "status", "message"}`` for ``exc``: what events and metrics store.

    The message is bounded, masked and content-free (see :func:`content_free`).
    """
    status = status_of(exc)
    name = type(exc).__name__
    return {"error_kind": error_kind(name, status), "status": status,
            "message": content_free(name, status)}


def is_exception_text(text: str) -> bool:
    """Whether ``text`` reads ``SomeError: …``, a formatted exception (maybe a provider's)."""
    return _TYPE_NAME.match(text) is not None


def reduce_message(text: str) -> str:
    """A formatted ``Type: message`` string reduced as :func:`error_fields` would."""
    found = _TYPE_NAME.match(text or "")
    name = found.group(1) if found else "Error"
    status_match = _STATUS.search(text or "")
    return content_free(name, int(status_match.group(1)) if status_match else None)


def install_log_masking() -> None:
    """Mask keys in every log record of the process from now on (idempotent).

    Records are formatted and masked when created, so every handler (files, stderr,
    pytest's capture) sees the masked text.
    """
    factory = logging.getLogRecordFactory()
    if getattr(factory, "_mas_masking", False):
        return

    def masked(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = factory(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: let logging report it as usual
            return record
        record.msg, record.args = mask(message), None
        return record

    masked._mas_masking = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(masked)
