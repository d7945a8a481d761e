"""A small JSON-RPC 2.0 client for ``mas-ctl serve --stdio``, over a child process's pipes.

::

    with StdioClient(["mas-ctl", "serve", "--stdio", "--runs", "runs"]) as client:
        for row in client.call("list_sessions")["sessions"]:
            print(client.call("session_status", session_id=row["session_id"]))
"""

from __future__ import annotations

import itertools
import json
import subprocess
from collections.abc import Sequence
from typing import IO, Any

from mas.runtime.control._jsonrpc import VERSION, RpcError


class StdioClient:
    """Talks to a JSON-RPC server that reads lines on stdin and answers on stdout.

    :param command: the server's argv.
    :param timeout: seconds to wait for the server to exit on :meth:`close`.
    """

    def __init__(self, command: Sequence[str], *, timeout: float = 30.0) -> None:
        self.timeout = timeout
        self.stderr = ""
        self._ids = itertools.count(1)
        self._process = subprocess.Popen(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def _pipes(self) -> tuple[IO[str], IO[str]]:
        stdin, stdout = self._process.stdin, self._process.stdout
        if stdin is None or stdout is None:
            raise RuntimeError("the server's pipes are closed")
        return stdin, stdout

    def send_line(self, line: str) -> None:
        """Write one raw line (a test may send what no well-behaved client would)."""
        stdin, _ = self._pipes()
        stdin.write(line.rstrip("\n") + "\n")
        stdin.flush()

    def read_reply(self) -> Any:
        """The next reply line, decoded.

        :raises EOFError: the server closed its output.
        """
        _, stdout = self._pipes()
        line = stdout.readline()
        if not line:
            raise EOFError(f"server exited with {self._process.poll()!r}")
        return json.loads(line)

    def request(self, method: str, params: Any = None) -> dict[str, Any]:
        """Send one request and return its whole reply object (result or error)."""
        ident = next(self._ids)
        self.send_line(json.dumps(_message(method, params, ident)))
        reply = self.read_reply()
        if not isinstance(reply, dict) or reply.get("id") != ident:
            raise RuntimeError(f"reply {reply!r} does not answer request {ident}")
        return reply

    def call(self, method: str, **params: Any) -> Any:
        """Call ``method`` with by-name params and return its result.

        :raises RpcError: the server answered with an error.
        """
        reply = self.request(method, params or None)
        if "error" in reply:
            error = reply["error"]
            raise RpcError(error["code"], error["message"], error.get("data"))
        return reply["result"]

    def notify(self, method: str, **params: Any) -> None:
        """Send a notification: no id, and the server sends nothing back."""
        self.send_line(json.dumps(_message(method, params or None, None)))

    def batch(self, calls: Sequence[tuple[str, dict[str, Any] | None]]) -> list[dict[str, Any]]:
        """Send ``calls`` as one batch and return the replies, ordered as the calls."""
        idents = [next(self._ids) for _ in calls]
        messages = [_message(m, p, i) for (m, p), i in zip(calls, idents, strict=True)]
        self.send_line(json.dumps(messages))
        replies = self.read_reply()
        by_id = {reply.get("id"): reply for reply in replies}
        return [by_id[ident] for ident in idents]

    def close(self) -> int:
        """Close the server's input and wait for it; returns its exit code.

        What the server wrote on stderr is kept in :attr:`stderr`.
        """
        _, self.stderr = self._process.communicate(timeout=self.timeout)
        return self._process.returncode

    def __enter__(self) -> StdioClient:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._process.poll() is None:
            self.close()


def _message(method: str, params: Any, ident: int | None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": VERSION, "method": method}
    if params is not None:
        message["params"] = params
    if ident is not None:
        message["id"] = ident
    return message
