"""A realistic OpenAI-compatible chat server on 127.0.0.1, for tests and local tooling.

It is the provider the reliability suite talks to through LiteLLM's real call path, so
that what a real model does to mas — count tokens differently, reject an over-long
request, stall, drop the connection, answer 5xx — happens here too:

- its tokenizer counts **every digit as one token** (as Llama-family tokenizers do), so
  the chars/4 estimate undercounts digit-dense text the way it does on a real server;
- it has a window (8,192 by default) and rejects a request that does not fit with the
  error body OpenAI, vLLM, Anthropic, Gemini or llama.cpp's server sends
  (:data:`WINDOW_STYLES`), which LiteLLM maps to ``ContextWindowExceededError``;
- a persistent :attr:`FakeProvider.mode` (``ok``, ``slow``, ``trickle``, ``drop``,
  ``status``) and a per-request script (:meth:`FakeProvider.push`) choose what it does.

Use it in a test::

    from mas.runtime.fakeprovider import serve

    with serve(window=8192) as provider:
        provider.mode = "status"; provider.status = 502
        ...  # point generation.api_base at provider.base_url

or from a shell: ``python -m mas.runtime.fakeprovider --port 8080``. Nothing here is
imported by the kernel itself; it needs only the standard library.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODES = ("ok", "slow", "trickle", "drop", "status", "malformed", "empty_choices")
"""What the server does with a request: answer, answer late, answer a byte at a time,
close the connection unanswered, send an error status, send broken JSON, send no choices."""

WINDOW_STYLES = ("openai", "openai-messages", "vllm", "anthropic", "gemini", "llamacpp")
"""Which server's over-long-request error body to send, in that server's own wording:
OpenAI's "you requested N tokens (P in the messages, C in the completion)", OpenAI's "your
messages resulted in N tokens", vLLM's "your request has N input tokens" (or its
``max_tokens`` "is too large" when only the reply does not fit), Anthropic's "prompt is too
long: N tokens > W maximum", Gemini's "The input token count (N) exceeds the maximum number
of tokens allowed (W)", and llama.cpp's ``exceed_context_size_error`` with its numbers."""

_WORD = re.compile(r"[A-Za-z]+|\d|[^\sA-Za-z\d]")


def count_tokens(text: str) -> int:
    """Tokens of ``text``: one per digit, one per four letters of a word, one per symbol."""
    tokens = 0
    for piece in _WORD.findall(text):
        tokens += math.ceil(len(piece) / 4) if piece[0].isalpha() else 1
    return tokens


def request_tokens(body: dict[str, Any]) -> int:
    """Prompt tokens of a chat request: messages (4 each, plus content), tools, 3 per request."""
    total = 3
    for message in body.get("messages") or []:
        total += 4
        content = message.get("content")
        if isinstance(content, list):
            content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        total += count_tokens(str(content or ""))
        for call in message.get("tool_calls") or []:
            total += count_tokens(json.dumps(call.get("function") or {}))
    if body.get("tools"):
        total += count_tokens(json.dumps(body["tools"]))
    return total


def default_answer(body: dict[str, Any]) -> str:
    """A reply that keeps what a summary must keep: the numbers of the conversation.

    A judge request (``response_format`` set) gets a JSON verdict instead.
    """
    if body.get("response_format"):
        return json.dumps({"score": 1.0, "reason": "fake provider verdict"})
    seen: list[str] = []
    for message in body.get("messages") or []:
        if message.get("role") == "system":
            continue
        for number in re.findall(r"\d[\d-]{2,}", str(message.get("content") or "")):
            if number not in seen:
                seen.append(number)
    listed = ", ".join(seen[-40:])
    return f"Noted. Identifiers so far: {listed}." if listed else "Noted."


@dataclass
class Action:
    """What the server does for one request (see :data:`MODES`)."""

    mode: str = "ok"
    status: int = 500
    message: str = "scripted failure"
    headers: dict[str, str] = field(default_factory=dict)
    text: str | None = None
    delay: float | None = None


@dataclass
class FakeProvider:
    """The server's state: behaviour settings, the script, and every request seen.

    :ivar window: context size in this tokenizer's tokens.
    :ivar window_style: error body for an over-long request (:data:`WINDOW_STYLES`).
    :ivar mode: what requests get when the script is empty (:data:`MODES`).
    :ivar status: the status ``status`` mode sends (500, 502, 503, 529, 429, ...).
    :ivar delay: seconds ``slow`` waits before answering; per byte for ``trickle``.
    :ivar answer: the reply text for a request body.
    :ivar tool_calls: names of tools every reply calls (a model stuck in a tool loop).
    :ivar usage: ``(prompt, completion, cached)`` to report instead of the counted usage.
    :ivar requests: every request body, in arrival order.
    :ivar headers: the headers of each request (lower-case names).
    :ivar rejected: prompt-token counts of requests refused for not fitting the window.
    :ivar served: prompt-token counts of requests answered.
    """

    window: int = 8192
    window_style: str = "openai"
    mode: str = "ok"
    status: int = 500
    delay: float = 0.0
    answer: Callable[[dict[str, Any]], str] = default_answer
    tool_calls: list[str] = field(default_factory=list)
    usage: tuple[int, int, int] | None = None
    base_url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    rejected: list[int] = field(default_factory=list)
    served: list[int] = field(default_factory=list)
    script: list[Action] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def push(self, mode: str, **kwargs: Any) -> FakeProvider:
        """Queue one request's behaviour ahead of :attr:`mode`; returns self to chain."""
        if mode not in MODES:
            raise ValueError(f"mode: must be one of {', '.join(MODES)} (got {mode!r})")
        with self._lock:
            self.script.append(Action(mode, **kwargs))
        return self

    def next_action(self) -> Action:
        """The scripted action for the next request, else the persistent mode."""
        with self._lock:
            if self.script:
                return self.script.pop(0)
        return Action(self.mode, status=self.status)

    def overflow(self, body: dict[str, Any], prompt: int) -> dict[str, Any] | None:
        """The error body when the request does not fit the window, else ``None``."""
        completion = int(body.get("max_tokens") or body.get("max_completion_tokens") or 0)
        window, style = self.window, self.window_style
        if style in ("openai", "vllm"):
            # These count the reply's reserve against the window too.
            if prompt + completion <= window:
                return None
        elif prompt < window:
            return None  # the others check the prompt alone
        if style == "llamacpp":
            return {"error": {
                "code": 400, "type": "exceed_context_size_error",
                "message": "the request exceeds the available context size, try increasing it",
                "n_prompt_tokens": prompt, "n_ctx": window,
            }}
        if style == "anthropic":
            return {"type": "error", "error": {
                "type": "invalid_request_error",
                "message": f"prompt is too long: {prompt} tokens > {window} maximum"}}
        if style == "gemini":
            said = (f"The input token count ({prompt}) exceeds the maximum number of tokens "
                    f"allowed ({window}).")
            return {"error": {"code": 400, "message": said, "status": "INVALID_ARGUMENT"}}
        if style == "vllm":
            said = (f"This model's maximum context length is {window} tokens. However, your "
                    f"request has {prompt} input tokens. Please reduce the length of the "
                    "input messages." if prompt >= window else
                    f"'max_tokens' or 'max_completion_tokens' is too large: {completion}. "
                    f"This model's maximum context length is {window} tokens and your "
                    f"request has {prompt} input tokens ({completion} > {window} - {prompt}).")
            return {"error": {"message": said, "type": "BadRequestError", "param": None,
                              "code": 400}}
        said = (f"This model's maximum context length is {window} tokens. However, you "
                f"requested {prompt + completion} tokens ({prompt} in the messages, "
                f"{completion} in the completion). Please reduce the length of the messages "
                "or completion." if style == "openai" else
                f"This model's maximum context length is {window} tokens. However, your "
                f"messages resulted in {prompt} tokens. Please reduce the length of the "
                "messages.")
        return {"error": {"message": said, "type": "invalid_request_error",
                          "param": "messages", "code": "context_length_exceeded"}}


def completion_body(text: str, model: str, prompt: int, completion: int,
                    cached: int = 0) -> dict[str, Any]:
    """A well-formed ``chat.completion`` response with usage."""
    return {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion,
                  "prompt_tokens_details": {"cached_tokens": cached}},
    }


def _handler(state: FakeProvider) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            return

        def do_GET(self) -> None:  # noqa: N802
            # /v1/models and /health, as llama.cpp's server answers them.
            self._send(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})

        def do_POST(self) -> None:  # noqa: N802
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            body = json.loads(raw or b"{}")
            with state._lock:
                state.requests.append(body)
                state.headers.append({k.lower(): v for k, v in self.headers.items()})
            action = state.next_action()
            prompt = request_tokens(body)
            if action.mode == "drop":
                self.close_connection = True
                return
            if action.mode == "status":
                self._send(action.status, {"error": {"message": action.message,
                                                     "code": action.status}}, action.headers)
                return
            if action.mode == "malformed":
                self._raw(200, b'{"id": "x", "choices": [ {"message": ')
                return
            rejected = state.overflow(body, prompt)
            if rejected is not None:
                with state._lock:
                    state.rejected.append(prompt)
                self._send(400, rejected)
                return
            text = action.text if action.text is not None else state.answer(body)
            usage = state.usage or (prompt, count_tokens(text), 0)
            payload = completion_body(text, str(body.get("model", "")), *usage)
            if state.tool_calls:
                payload["choices"][0]["finish_reason"] = "tool_calls"
                payload["choices"][0]["message"]["tool_calls"] = [
                    {"id": f"call_{len(state.requests)}_{i}", "type": "function",
                     "function": {"name": name, "arguments": "{}"}}
                    for i, name in enumerate(state.tool_calls)]
            if action.mode == "empty_choices":
                payload["choices"] = []
            with state._lock:
                state.served.append(prompt)
            if action.mode == "slow":
                # Waits for the client to give up (or the server to stop), never longer.
                state.release.wait(state.delay if action.delay is None else action.delay)
            if action.mode == "trickle":
                self._trickle(json.dumps(payload).encode())
                return
            self._send(200, payload, action.headers)

        def _trickle(self, data: bytes) -> None:
            try:
                self._head(200, len(data), {})
                for index in range(len(data)):
                    if state.release.wait(state.delay):
                        return
                    self.wfile.write(data[index:index + 1])
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                return

        def _send(self, status: int, payload: dict[str, Any],
                  headers: dict[str, str] | None = None) -> None:
            self._raw(status, json.dumps(payload).encode(), headers)

        def _head(self, status: int, length: int, headers: dict[str, str]) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(length))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()

        def _raw(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
            try:
                self._head(status, len(data), headers or {})
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                # The client gave up first (timeouts on purpose): keep serving the next one.
                return

    return Handler


def closed_base_url() -> str:
    """An ``api_base`` on 127.0.0.1 where nothing listens (connection refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@contextmanager
def serve(port: int = 0, *, provider: FakeProvider | None = None,
          **settings: Any) -> Iterator[FakeProvider]:
    """Run ``provider`` (default: a :class:`FakeProvider` of ``settings``) on 127.0.0.1,
    on an ephemeral port by default."""
    state = provider if provider is not None else FakeProvider(**settings)
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(state))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        state.release.set()
        server.shutdown()
        server.server_close()
        thread.join()


def main(argv: list[str] | None = None) -> None:
    """``python -m mas.runtime.fakeprovider``: serve until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--window", type=int, default=8192)
    parser.add_argument("--window-style", choices=WINDOW_STYLES, default="openai")
    parser.add_argument("--mode", choices=MODES, default="ok")
    parser.add_argument("--status", type=int, default=500)
    parser.add_argument("--delay", type=float, default=0.0)
    args = parser.parse_args(argv)
    with serve(args.port, window=args.window, window_style=args.window_style, mode=args.mode,
               status=args.status, delay=args.delay) as state:
        print(state.base_url, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            return


if __name__ == "__main__":
    main()
