"""JSON-RPC 2.0 over newline-delimited JSON: requests, notifications, batches, errors.

One message per line in, one reply per line out (a batch reply is one JSON array on one
line). This is the framing MCP uses on stdio; it needs no headers and any editor or script
that can write a line can speak it.

Error codes are the standard ones (``-32700`` parse error, ``-32600`` invalid request,
``-32601`` method not found, ``-32602`` invalid params, ``-32603`` internal error) plus
application codes in the ``-32000..-32099`` server range, declared by the methods.

Every message is bounded (issue 26, item 5; docs/control.md): nesting deeper than
:data:`MAX_DEPTH` is a parse error before the decoder sees it (so it cannot recurse out of
the stack), ``NaN``/``Infinity`` (not JSON) are parse errors, a batch of more than
:data:`MAX_BATCH` requests and an id longer than :data:`MAX_ID_CHARS` are invalid
requests, and a reply over :data:`MAX_REPLY_BYTES` is replaced by an internal error. The
line length is bounded where lines are read (:mod:`mas.runtime.control._stdio`).
"""

from __future__ import annotations

import json
import logging
import math
import reprlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mas.runtime.spec.jsonl import nesting_depth

log = logging.getLogger(__name__)

VERSION = "2.0"
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

MAX_DEPTH = 64
"""Deepest nesting of arrays and objects in one message (a batch counts as one level)."""
MAX_BATCH = 100
"""Most requests in one batch."""
MAX_ID_CHARS = 256
"""Longest string id; a longer one is not echoed back."""
MAX_REPLY_BYTES = 1 << 20
"""Largest reply line (a batch's whole array); past it, an item gets an internal error."""

_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxother, _SHORT.maxlist, _SHORT.maxdict = (
    2, 60, 60, 4, 4)


def short(value: Any) -> str:
    """A bounded repr for error messages: never long, never deeply nested."""
    return _SHORT.repr(value)


class RpcError(Exception):
    """An error reply: a JSON-RPC code, a one-line message and optional data.

    Raised by method handlers to answer with an error; also what the client raises when a
    reply carries one.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_json(self) -> dict[str, Any]:
        """The reply's ``error`` member."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


@dataclass(frozen=True)
class Param:
    """One named parameter of a method.

    :ivar name: the key in a by-name ``params`` object (its index in a by-position array is
        its place in the method's parameter list).
    :ivar kind: the JSON type it must have (``str``, ``int``, ``bool``).
    :ivar required: whether the call fails without it.
    :ivar max_chars: longest string accepted (``None``: no bound beyond the line's).
    """

    name: str
    kind: type = str
    required: bool = True
    max_chars: int | None = None


@dataclass(frozen=True)
class Method:
    """A callable method: its name, its parameters and the handler taking them by keyword."""

    name: str
    params: tuple[Param, ...]
    handler: Callable[..., Any]


class Dispatcher:
    """Answers JSON-RPC 2.0 messages with a fixed set of methods.

    :param methods: the methods, each under its own name.
    """

    def __init__(self, methods: Sequence[Method]) -> None:
        self.methods = {method.name: method for method in methods}

    def handle_line(self, line: str | bytes) -> str | None:
        """The reply line to one input line, ``None`` when nothing is to be sent back.

        Nothing is sent for a notification, for a batch of notifications, or for a blank
        line. Bytes that are not UTF-8 get a parse error like any other bad JSON.
        """
        if not line.strip():
            return None
        try:
            text = line.decode("utf-8") if isinstance(line, bytes) else line
            depth = nesting_depth(text, MAX_DEPTH)
            if depth > MAX_DEPTH:
                raise ValueError(f"nested {depth} deep, more than {MAX_DEPTH}")
            message = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite)
        except ValueError as exc:
            return _dump(_error_reply(None, RpcError(PARSE_ERROR, f"Parse error: {exc}")))
        reply = self.handle(message)
        return None if reply is None else _dump(reply)

    def handle(self, message: Any) -> Any:
        """The reply to one decoded message (a request or a batch), ``None`` for none."""
        if isinstance(message, list):
            if not message:
                return _error_reply(None, RpcError(INVALID_REQUEST, "Invalid Request: empty batch"))
            if len(message) > MAX_BATCH:
                return _error_reply(None, RpcError(
                    INVALID_REQUEST,
                    f"Invalid Request: batch of {len(message)} requests, more than {MAX_BATCH}"))
            replies, size = [], 2  # the brackets; each item adds its ", "
            for item in message:
                reply = self._one(item)
                if reply is None:
                    continue
                reply = _sendable(reply, MAX_REPLY_BYTES - size - 2, "the batch's reply")
                size += len(_dump(reply)) + 2
                replies.append(reply)
            return replies or None
        reply = self._one(message)
        return None if reply is None else _sendable(reply, MAX_REPLY_BYTES, "the reply")

    def _one(self, request: Any) -> dict[str, Any] | None:
        if not isinstance(request, dict):
            return _error_reply(None, RpcError(INVALID_REQUEST, "Invalid Request: not an object"))
        ident = request.get("id")
        # An id that is not a string, number or null cannot be echoed back as this request's,
        # nor can a string id too long to echo.
        if isinstance(ident, bool) or not isinstance(ident, (str, int, float, type(None))):
            error = RpcError(INVALID_REQUEST, f"Invalid Request: id {short(ident)}")
            return _error_reply(None, error)
        if isinstance(ident, str) and len(ident) > MAX_ID_CHARS:
            return _error_reply(None, RpcError(
                INVALID_REQUEST, f"Invalid Request: id of {len(ident)} characters, more than "
                                 f"{MAX_ID_CHARS}"))
        try:
            name, params = _parse(request)
        except RpcError as exc:
            # Only a valid Request object without an id is a notification: anything else is
            # answered, under null when it has no id (the specification's own examples).
            return _error_reply(ident, exc)
        notification = "id" not in request
        try:
            method = self._method(name)
            result = method.handler(**bind_params(method, params))
        except RpcError as exc:
            return None if notification else _error_reply(ident, exc)
        except Exception as exc:  # a bug in a handler must not end the session
            log.exception("control method %r failed", name)
            error = RpcError(INTERNAL_ERROR, f"Internal error: {type(exc).__name__}")
            return None if notification else _error_reply(ident, error)
        return None if notification else {"jsonrpc": VERSION, "result": result, "id": ident}

    def _method(self, name: str) -> Method:
        method = self.methods.get(name)
        if method is None:
            raise RpcError(
                METHOD_NOT_FOUND,
                f"Method not found: {short(name)}",
                {"methods": sorted(self.methods)},
            )
        return method


def _parse(request: dict[str, Any]) -> tuple[str, list[Any] | dict[str, Any] | None]:
    """The method name and params of a valid Request object.

    :raises RpcError: ``-32600``: ``jsonrpc``, ``method`` or ``params`` is of the wrong kind.
    """
    if request.get("jsonrpc") != VERSION:
        found = request.get("jsonrpc")
        raise RpcError(INVALID_REQUEST,
                       f'Invalid Request: jsonrpc must be "2.0" (got {short(found)})')
    name = request.get("method")
    if not isinstance(name, str):
        raise RpcError(INVALID_REQUEST, f"Invalid Request: method {short(name)}")
    params = request.get("params")
    if params is not None and not isinstance(params, (list, dict)):
        raise RpcError(
            INVALID_REQUEST,
            f"Invalid Request: params must be an object or array (got {short(params)})",
        )
    return name, params


def bind_params(method: Method, raw: list[Any] | dict[str, Any] | None) -> dict[str, Any]:
    """Keyword arguments for ``method`` from a by-name object or a by-position array.

    :raises RpcError: ``-32602`` naming the parameter and the value that is wrong.
    """
    names = [param.name for param in method.params]
    if raw is None:
        given: Mapping[str, Any] = {}
    elif isinstance(raw, list):
        if len(raw) > len(names):
            raise RpcError(
                INVALID_PARAMS, f"Invalid params: {method.name} takes at most {len(names)}"
            )
        given = dict(zip(names, raw, strict=False))  # trailing optional params may be left out
    else:
        given = raw
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise RpcError(INVALID_PARAMS,
                       f"Invalid params: {unknown[0][:60]}: unknown; expected {names}")
    bound: dict[str, Any] = {}
    for param in method.params:
        if param.name not in given:
            if param.required:
                raise RpcError(INVALID_PARAMS, f"Invalid params: {param.name}: required")
            continue
        value = given[param.name]
        if not _has_kind(value, param.kind):
            raise RpcError(
                INVALID_PARAMS,
                f"Invalid params: {param.name}: must be a {param.kind.__name__} "
                f"(got {short(value)})",
            )
        if param.max_chars is not None and isinstance(value, str) and len(value) > param.max_chars:
            raise RpcError(
                INVALID_PARAMS,
                f"Invalid params: {param.name}: {len(value)} characters, more than "
                f"{param.max_chars}",
            )
        bound[param.name] = value
    return bound


def _has_kind(value: Any, kind: type) -> bool:
    # JSON true/false decode to bool, which Python counts as an int: keep them apart.
    if kind is bool or isinstance(value, bool):
        return kind is bool and isinstance(value, bool)
    return isinstance(value, kind)


def _error_reply(ident: Any, error: RpcError) -> dict[str, Any]:
    return {"jsonrpc": VERSION, "error": error.to_json(), "id": ident}


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:20]} is out of range")
    return value


def _dump(reply: Any) -> str:
    # allow_nan=False: a reply is JSON, whatever a saved file held (see _sendable).
    return json.dumps(reply, allow_nan=False)


def _sendable(reply: dict[str, Any], budget: int, what: str) -> dict[str, Any]:
    """``reply``, or an internal error under its id when it is not JSON or over ``budget``."""
    try:
        size = len(_dump(reply))
    except ValueError:
        return _error_reply(reply.get("id"), RpcError(
            INTERNAL_ERROR, "Internal error: the reply holds a number JSON cannot write"))
    if size > budget:
        return _error_reply(reply.get("id"), RpcError(
            INTERNAL_ERROR, f"Internal error: {what} would exceed {MAX_REPLY_BYTES} bytes"))
    return reply
