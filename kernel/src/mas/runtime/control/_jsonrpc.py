"""JSON-RPC 2.0 over newline-delimited JSON: requests, notifications, batches, errors.

One message per line in, one reply per line out (a batch reply is one JSON array on one
line). This is the framing MCP uses on stdio; it needs no headers and any editor or script
that can write a line can speak it.

Error codes are the standard ones (``-32700`` parse error, ``-32600`` invalid request,
``-32601`` method not found, ``-32602`` invalid params, ``-32603`` internal error) plus
application codes in the ``-32000..-32099`` server range, declared by the methods.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

VERSION = "2.0"
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


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
    """

    name: str
    kind: type = str
    required: bool = True


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
            message = json.loads(line)
        except ValueError as exc:
            return json.dumps(_error_reply(None, RpcError(PARSE_ERROR, f"Parse error: {exc}")))
        reply = self.handle(message)
        return None if reply is None else json.dumps(reply)

    def handle(self, message: Any) -> Any:
        """The reply to one decoded message (a request or a batch), ``None`` for none."""
        if isinstance(message, list):
            if not message:
                return _error_reply(None, RpcError(INVALID_REQUEST, "Invalid Request: empty batch"))
            replies = [reply for item in message if (reply := self._one(item)) is not None]
            return replies or None
        return self._one(message)

    def _one(self, request: Any) -> dict[str, Any] | None:
        if not isinstance(request, dict):
            return _error_reply(None, RpcError(INVALID_REQUEST, "Invalid Request: not an object"))
        ident = request.get("id")
        # An id that is not a string, number or null cannot be echoed back as this request's.
        if isinstance(ident, bool) or not isinstance(ident, (str, int, float, type(None))):
            return _error_reply(None, RpcError(INVALID_REQUEST, f"Invalid Request: id {ident!r}"))
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
                f"Method not found: {name!r}",
                {"methods": sorted(self.methods)},
            )
        return method


def _parse(request: dict[str, Any]) -> tuple[str, list[Any] | dict[str, Any] | None]:
    """The method name and params of a valid Request object.

    :raises RpcError: ``-32600``: ``jsonrpc``, ``method`` or ``params`` is of the wrong kind.
    """
    if request.get("jsonrpc") != VERSION:
        found = request.get("jsonrpc")
        raise RpcError(INVALID_REQUEST, f'Invalid Request: jsonrpc must be "2.0" (got {found!r})')
    name = request.get("method")
    if not isinstance(name, str):
        raise RpcError(INVALID_REQUEST, f"Invalid Request: method {name!r}")
    params = request.get("params")
    if params is not None and not isinstance(params, (list, dict)):
        raise RpcError(
            INVALID_REQUEST, f"Invalid Request: params must be an object or array (got {params!r})"
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
        raise RpcError(INVALID_PARAMS, f"Invalid params: {unknown[0]}: unknown; expected {names}")
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
                f"Invalid params: {param.name}: must be a {param.kind.__name__} (got {value!r})",
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
