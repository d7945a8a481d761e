"""Sizing a request to a window before sending (``mas.runtime.engine._window.fit``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mas.runtime.context.calibration import Calibration
from mas.runtime.context.estimate import DEFAULT_ESTIMATOR
from mas.runtime.engine._window import (
    HEADROOM,
    estimate_basis,
    estimate_request,
    fit,
    fit_request,
    known_window,
)

contents = st.lists(st.text(alphabet="ab7 .", max_size=4000), min_size=1, max_size=8)


def _plain(messages: list[dict[str, object]]) -> int:
    return DEFAULT_ESTIMATOR.messages(messages)  # type: ignore[arg-type]


@given(contents, st.integers(1, 3000))
def test_a_fit_is_untouched_or_under_the_headroom(texts: list[str], room: int) -> None:
    messages = [{"role": "user", "content": t} for t in texts]
    fitted = fit(messages, room, _plain)  # type: ignore[arg-type]
    assert fitted.estimated == _plain(messages)  # type: ignore[arg-type]
    if fitted.estimated <= room:
        assert fitted.shrunk.messages == messages and fitted.shrunk.cut_chars == 0
        return
    assert len(fitted.shrunk.messages) == len(messages)
    # Only the per-message framing cannot be cut: beyond it, the target is met.
    framing = DEFAULT_ESTIMATOR.message_overhead * len(messages) + len(messages) * 20
    assert fitted.shrunk.cut_chars == 0 or fitted.sent <= max(HEADROOM * room, framing)


def test_no_room_leaves_the_request_to_the_provider() -> None:
    messages = [{"role": "user", "content": "x" * 10_000}]
    assert fit(messages, 0, _plain).shrunk.cut_chars == 0  # type: ignore[arg-type]


def test_the_estimate_starts_with_the_digit_prior_then_uses_the_calibration() -> None:
    digits = [{"role": "user", "content": " ".join(f"{n:08d}" for n in range(300))}]
    calibration = Calibration(enabled=True)
    plain = DEFAULT_ESTIMATOR.messages(digits)
    assert estimate_basis(calibration, "m") == "digit-prior"
    assert estimate_request(calibration, "m", digits) > 2 * plain
    for _ in range(3):
        calibration.observe("m", digits, plain)  # this provider counts like chars/4
    assert estimate_basis(calibration, "m") == "calibrated"
    assert abs(estimate_request(calibration, "m", digits) - plain) <= 0.02 * plain
    calibration.enabled = False
    assert estimate_basis(calibration, "m") == "chars/4"
    assert estimate_request(calibration, "m", digits) == plain


def test_tool_schemas_count_toward_the_fit() -> None:
    tools = [{"type": "function", "function": {"name": "f", "description": "d" * 4000}}]
    messages = [{"role": "user", "content": "hello " * 100}]
    calibration = Calibration(enabled=False)
    alone = fit_request(calibration, "m", messages, None, window=1200, reserve=100)
    assert alone.shrunk.cut_chars == 0
    with_tools = fit_request(calibration, "m", messages, tools, window=1200, reserve=100)
    assert with_tools.shrunk.cut_chars > 0 and with_tools.basis == "chars/4"


def test_an_unknown_model_has_no_window_rather_than_the_fallback() -> None:
    assert known_window("openai/nobody-lists-this") is None
    assert known_window("openai/nobody-lists-this", infra=4096) == 4096
    assert known_window("openai/nobody-lists-this", row=2048, infra=4096) == 2048
    assert known_window("offline/default") == 128_000
