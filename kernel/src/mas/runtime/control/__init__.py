"""The control protocol: JSON-RPC 2.0 over stdio for ``mas-ctl serve --stdio`` (docs/control.md).

::

    from mas.runtime.control import Dispatcher, SessionTree

    dispatcher = Dispatcher(SessionTree(Path("runs")).methods())
    print(dispatcher.handle_line('{"jsonrpc": "2.0", "id": 1, "method": "list_sessions"}'))
"""

from __future__ import annotations

from mas.runtime.control._jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    MAX_BATCH,
    MAX_DEPTH,
    MAX_ID_CHARS,
    MAX_REPLY_BYTES,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    Dispatcher,
    Method,
    Param,
    RpcError,
)
from mas.runtime.control._stdio import MAX_LINE_BYTES, serve
from mas.runtime.control.client import StdioClient
from mas.runtime.control.sessions import (
    NO_MODEL_CALL,
    SESSION_NOT_FOUND,
    SessionTree,
    saved_view,
)

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "MAX_BATCH",
    "MAX_DEPTH",
    "MAX_ID_CHARS",
    "MAX_LINE_BYTES",
    "MAX_REPLY_BYTES",
    "METHOD_NOT_FOUND",
    "NO_MODEL_CALL",
    "PARSE_ERROR",
    "SESSION_NOT_FOUND",
    "Dispatcher",
    "Method",
    "Param",
    "RpcError",
    "SessionTree",
    "StdioClient",
    "saved_view",
    "serve",
]
