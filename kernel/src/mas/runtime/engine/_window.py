"""Requests that fit the model's window: sized before sending, re-sized after a refusal.

Before sending, when the called model's window is known, :func:`fit` estimates the
request (:func:`estimate_request`: the engine's calibration, else the digit prior) and,
when it and the reply's reserve do not fit, cuts it with :func:`shrink` below
:data:`HEADROOM` of the room.

After a refusal, the provider's numbers guide the cut. LiteLLM maps every provider's
"context length exceeded" answer to ``ContextWindowExceededError``; :func:`parse_overflow`
reads the window and the refused prompt from the wordings in :data:`_WORDINGS` (OpenAI's
two, vLLM's two, Anthropic's, Gemini's) or llama.cpp's ``n_prompt_tokens`` and ``n_ctx``;
some say neither. :func:`shrink_factor` turns whatever was said into the share of the
request to keep, and :func:`shrink` cuts the longest message contents (their middles,
marked) to that share.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from mas.runtime.catalog import Catalog, default_catalog
from mas.runtime.context.calibration import Calibration, digit_prior
from mas.runtime.errors import ModelCallError
from mas.runtime.protocols import Message
from mas.runtime.spec.model_ref import map_model
from mas.runtime.spec.windows import resolve_window

CUT_MARK = "\n[... {n} characters cut to fit the model's window ...]\n"
"""Stands where the middle of a message was cut, so the model (and a reader) sees the gap."""

_WORDINGS = tuple(re.compile(pattern, re.S | re.I) for pattern in (
    # OpenAI (and vLLM before 0.10): prompt plus completion, split when it says so.
    r"maximum context length is (?P<window>\d+) tokens.*?requested (?P<requested>\d+) tokens"
    r"(?: \((?P<prompt>\d+) in (?:the messages|your prompt)[,;] (?P<completion>\d+) "
    r"(?:in|for) the completion\))?",
    # OpenAI: the messages alone are over the window.
    r"maximum context length is (?P<window>\d+) tokens.*?your messages resulted in "
    r"(?P<prompt>\d+) tokens",
    # vLLM: the reply's max_tokens does not fit beside the prompt.
    r"too large: (?P<completion>\d+)\. This model's maximum context length is "
    r"(?P<window>\d+) tokens and your request has (?P<prompt>\d+) input tokens",
    # vLLM: the prompt alone is over the window.
    r"maximum context length is (?P<window>\d+) tokens.*?your request has (?P<prompt>\d+) "
    r"input tokens",
    # Anthropic.
    r"prompt is too long: (?P<prompt>\d+) tokens > (?P<window>\d+) maximum",
    # Gemini.
    r"input token count \(?(?P<prompt>\d+)\)? exceeds the maximum number of tokens allowed "
    r"\(?(?P<window>\d+)",
))
"""Overflow messages that name the window and the refused request, tried in order (a more
specific wording before the general one it contains): groups ``window`` and either
``requested`` (prompt plus completion) or ``prompt``, with ``completion`` when said."""
_LLAMACPP_PROMPT = re.compile(r"n_prompt_tokens['\"]?\s*[:=]\s*(\d+)")
_LLAMACPP_CTX = re.compile(r"n_ctx['\"]?\s*[:=]\s*(\d+)")

_MARK_ROOM = len(CUT_MARK.format(n=10**9))

HEADROOM = 0.9
"""Aim this far below the provider's limit: its count of the cut request is not known."""

FIT_ATTEMPTS = 4
"""Cuts :func:`fit` tries: fixed costs (framing, tool schemas) do not shrink with the text,
so a first cut in proportion can fall short of the target."""

MIN_FACTOR = 0.01
"""Smallest share of the text :func:`fit` keeps; below it the provider is left to refuse."""


class WindowExceededError(ModelCallError):
    """The provider refused a request as longer than the model's window.

    :ivar window: the window the provider named, ``None`` when it did not say.
    :ivar requested: tokens the request needed by the provider's count (prompt plus
        completion for OpenAI, prompt alone for llama.cpp), ``None`` when not said.
    :ivar completion: completion tokens included in ``requested`` (0 when not said).
    """

    def __init__(self, message: str, *, window: int | None = None,
                 requested: int | None = None, completion: int = 0) -> None:
        super().__init__(message)
        self.window = window
        self.requested = requested
        self.completion = completion

    @property
    def prompt_tokens(self) -> int | None:
        """The provider's count of the prompt, when it said."""
        return None if self.requested is None else self.requested - self.completion


def parse_overflow(text: str) -> tuple[int | None, int | None, int]:
    """``(window, requested, completion)`` found in a provider's overflow message."""
    for wording in _WORDINGS:
        found = wording.search(text)
        if found is None:
            continue
        said = {name: int(value) for name, value in found.groupdict().items() if value}
        completion = said.get("completion", 0)
        requested = said.get("requested", said.get("prompt", 0) + completion)
        return said["window"], requested, completion
    prompt, ctx = _LLAMACPP_PROMPT.search(text), _LLAMACPP_CTX.search(text)
    if prompt and ctx:
        return int(ctx.group(1)), int(prompt.group(1)), 0
    return None, None, 0


def shrink_factor(error: WindowExceededError) -> float:
    """Share of the prompt to keep: from the provider's numbers, else one half."""
    if error.window and error.requested and error.requested > error.window:
        room = error.window - error.completion
        prompt = error.requested - error.completion
        if room > 0 and prompt > 0:
            return max(0.05, min(0.95, HEADROOM * room / prompt))
    return 0.5


@dataclass(frozen=True)
class Shrunk:
    """A cut request: the messages to send and how many characters were removed."""

    messages: list[Message]
    cut_chars: int
    cut_messages: int


def shrink(messages: list[Message], factor: float) -> Shrunk:
    """Keep about ``factor`` of the request's text by cutting the longest contents.

    Every message is kept (so tool-call pairs stay whole); a content longer than a common
    cap keeps its head and tail around :data:`CUT_MARK`. The cap is the largest that
    brings the total under ``factor`` of the original (water filling).
    """
    lengths = [len(m["content"]) if isinstance(m.get("content"), str) else 0 for m in messages]
    total = sum(lengths)
    target = math.floor(total * factor)
    if total == 0 or target >= total:
        return Shrunk(list(messages), 0, 0)
    cap = _cap(sorted(lengths, reverse=True), target)
    out: list[Message] = []
    cut_chars = cut_messages = 0
    # The mark takes room too: what is kept plus the mark stays within the cap.
    keep = max(0, cap - _MARK_ROOM)
    for message, length in zip(messages, lengths, strict=True):
        removed = length - keep
        if length <= cap or removed <= _MARK_ROOM:
            out.append(message)  # cutting this one would not make the request shorter
            continue
        content = str(message["content"])
        head = keep // 2
        mark = CUT_MARK.format(n=removed)
        out.append({**message, "content": content[:head] + mark + content[length - (keep - head):]})
        cut_chars += removed
        cut_messages += 1
    return Shrunk(out, cut_chars, cut_messages)


def _cap(desc: list[int], target: int) -> int:
    """Largest per-message length ``c`` with ``sum(min(len, c)) <= target``."""
    rest = sum(desc)
    for index, length in enumerate(desc):
        rest -= length
        # Messages before ``index`` are capped at ``c``; the others stay as they are.
        cap = (target - rest) // (index + 1)
        following = desc[index + 1] if index + 1 < len(desc) else 0
        if cap >= following:
            return max(0, min(cap, length))
    return 0


@dataclass(frozen=True)
class Fitted:
    """A request sized to a window before sending.

    :ivar shrunk: the messages to send and what was cut (nothing when it fitted).
    :ivar estimated: estimated prompt tokens of the request as it was given.
    :ivar sent: estimated prompt tokens of :attr:`shrunk`'s messages.
    :ivar basis: how the tokens were estimated (:func:`estimate_basis`).
    """

    shrunk: Shrunk
    estimated: int
    sent: int
    basis: str = "chars/4"

    def reason(self, purpose: str, model: str, window: int, reserve: int) -> str:
        """The degradation reason of this cut: model, estimate, window, characters cut."""
        return (
            f"{purpose} request to {model}: about {self.estimated:,} tokens ({self.basis} "
            f"estimate) + {reserve:,} for the reply do not fit its {window:,}-token window; "
            f"cut {self.shrunk.cut_chars:,} characters from {self.shrunk.cut_messages} "
            "message(s) before sending"
        )


def known_window(
    model: str,
    *,
    row: int | None = None,
    infra: int | None = None,
    infra_mappings: Mapping[str, str] | None = None,
    catalog: Catalog | None = None,
) -> int | None:
    """``model``'s window by :func:`~mas.runtime.spec.windows.resolve_window`, or ``None``
    where it would take its 128,000-token fallback: a guess is not a reason to cut."""
    catalog = catalog if catalog is not None else default_catalog()
    if row is None and infra is None and (
            catalog.context_window(map_model(model, infra_mappings)) is None):
        return None
    return resolve_window(model, agent_context_window=row, infra_context_window=infra,
                          infra_mappings=infra_mappings, catalog=catalog).value


def estimate_basis(calibration: Calibration, model: str) -> str:
    """Which estimate :func:`estimate_request` makes for ``model`` now: ``calibrated``
    (learned from its provider's usage), ``digit-prior`` or ``chars/4`` (calibration off)."""
    if not calibration.enabled:
        return "chars/4"
    return "calibrated" if calibration.learned(model) else "digit-prior"


def estimate_request(
    calibration: Calibration,
    model: str,
    messages: list[Message],
    tools: list[dict[str, Any]] | None = None,
) -> int:
    """Prompt tokens ``model``'s provider is expected to count for a request.

    The calibrated estimate once ``model`` has been seen often enough; before that the
    plain estimate scaled by :func:`~mas.runtime.context.calibration.digit_prior`, as a
    session sizes its turns; the plain estimate when calibration is switched off.
    """
    estimator = calibration.estimator
    schemas = estimator.tools(tools)
    basis = estimate_basis(calibration, model)
    if basis == "chars/4":
        return estimator.messages(messages) + schemas
    if basis == "calibrated":
        return calibration.estimate(model, messages) + math.ceil(
            schemas * calibration.ratio(model))
    texts = [m["content"] for m in messages if isinstance(m.get("content"), str)]
    return math.ceil((estimator.messages(messages) + schemas) * digit_prior(texts, estimator))


def fit_request(
    calibration: Calibration,
    model: str,
    messages: list[Message],
    tools: list[dict[str, Any]] | None,
    *,
    window: int,
    reserve: int,
) -> Fitted:
    """:func:`fit` a request to ``model`` into ``window`` less the reply's ``reserve``,
    estimated by :func:`estimate_request` (the basis is fixed for the whole fit)."""
    fitted = fit(messages, window - reserve,
                 lambda m: estimate_request(calibration, model, m, tools))
    return replace(fitted, basis=estimate_basis(calibration, model))


def fit(messages: list[Message], room: int, estimate: Callable[[list[Message]], int]) -> Fitted:
    """Cut ``messages`` to :data:`HEADROOM` of ``room`` tokens when their estimate exceeds it.

    A request whose estimate fits ``room`` is returned untouched; so is one with no room at
    all (a reply reserve at or over the window: only the provider can say what it does).
    Otherwise :func:`shrink` is applied to the original, re-estimated, and tightened in
    proportion until the estimate is under the target or :data:`FIT_ATTEMPTS` are used;
    the last cut is returned either way (the provider's refusal remains the backstop).
    """
    before = estimate(messages)
    untouched = Fitted(Shrunk(list(messages), 0, 0), before, before)
    if before <= room or room <= 0:
        return untouched
    target = HEADROOM * room
    factor, best = target / before, untouched
    for _ in range(FIT_ATTEMPTS):
        shrunk = shrink(messages, max(MIN_FACTOR, factor))
        if not shrunk.cut_chars:
            break
        after = estimate(shrunk.messages)
        best = Fitted(shrunk, before, after)
        if after <= target or factor <= MIN_FACTOR:
            break
        factor *= target / after
    return best
