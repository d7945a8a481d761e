"""Issue 26 item 1: every scan of untrusted text is linear in its input.

Each scan gets a hostile text and the same text doubled twice (four times as long); a
linear scan takes about four times as long on the second, a quadratic one about sixteen
(the old code pattern took 0.17 s on ``"HUGE-" * 2000``, 0.85 s on twice that). The bound
is on that ratio inside one run, never on wall-clock time (the ``scaling`` fixture of
``conftest.py``: best of interleaved repeats, garbage collector off, best of a few
rounds, so that a busy machine slows both sides alike).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mas.library.standard.offline import respond
from mas.library.standard.plugins.context.identifiers import identifiers_in
from mas.runtime.secrets import mask, mask_data, reduce_message, status_of

Scan = Callable[[str], Any]


def _summary(text: str, model: str = "default") -> Any:
    return respond([{"role": "system", "content": "Summarize the conversation."},
                    {"role": "user", "content": text}], model=model)


SCANS: dict[str, Scan] = {
    "identifiers": identifiers_in,
    "mask": lambda text: mask(text, ["sk-proj-1234", "abcd"]),
    "mask_data": lambda text: mask_data({"a": [text, {"b": text}]}, ["sk-proj-1234", "abcd"]),
    "provider_error": lambda text: (reduce_message(f"RuntimeError: {text}"),
                                    status_of(RuntimeError(text))),
    "offline_summary": _summary,
    "offline_mini": lambda text: _summary(text, model="mini"),
    "offline_question": lambda text: respond([{"role": "user", "content": text},
                                              {"role": "user", "content": "What is ORD 7?"}]),
    "offline_judge": lambda text: respond([
        {"role": "system", "content": 'Reply in JSON with a "score".\nExpected: ORD-1'},
        {"role": "user", "content": text}]),
    "offline_script": lambda text: respond([{"role": "user", "content": f"CALL x a{text}b"}]),
}
"""Every scan of untrusted text: the extractor, key masking, provider error reduction and
the offline model's rules (summary, lossy summary, question search, judge, scripts)."""

HOSTILE: dict[str, str] = {
    "hyphens": "-", "word_hyphens": "a-", "huge": "HUGE-", "code_parts": "A1-",
    "at_signs": "a@", "dots": "a.", "slashes": "a/", "backslashes": "a\\",
    "quotes": "'", "double_quotes": '"', "quoted_capitals": "'A", "quoted_words": '"Ab ',
    "digits": "1", "digit_commas": "1,", "digit_dots": "1.", "digit_colons": "1:",
    "spaces": " ", "newlines": "\n", "blank_lines": " \n", "capital_words": "Ab ",
    "numbers": "1 ", "month_days": "May 1 ", "mixed": "HUGE-a@b.c/1,2 'Ab Cd\\x 1:5",
}
"""Texts that made a backtracking pattern read the same run from every start, as units
repeated; each scan reads them after a line that arms its patterns."""

ARMED = "see http://x.io a@b.cc $1 5 USD a/b.txt C:\\a.b 'A' - "
"""A prefix with a literal of every identifier family, so that none is skipped."""

PREFIX = ARMED + "abcd Expected: [skill content retained verbatim: x status http"
"""Also a short key (which masking then looks for as a word) and the words the other
scans' patterns start from, the last of them right before the hostile run."""


def _repeated(prefix: str, unit: str) -> Callable[[int], str]:
    # The run gets a line of its own: a search that stops at the prefix's first match
    # must still read the run in the offline model's sentence-by-sentence scans.
    return lambda size: prefix + "\n" + unit * (size // len(unit)) + "!"


@pytest.mark.parametrize("hostile", sorted(HOSTILE))
@pytest.mark.parametrize("scan", sorted(SCANS))
def test_hostile2_item01_each_scan_is_linear_on_hostile_runs(scan: str, hostile: str,
                                                             scaling: Any) -> None:
    text = _repeated(ARMED if scan == "identifiers" else PREFIX, HOSTILE[hostile])
    ratio = scaling.ratio(SCANS[scan], text)
    assert ratio < scaling.limit, (
        f"{scan} on {hostile}: {scaling.growth}x the input took {ratio:.1f}x as long")


FRAGMENTS = ["-", "A", "Ab", "HUGE", "1", "12", ",", ".", "@", "/", "\\", "'", '"', " ", "\n",
             ":", "http://", "$", "USD", "kg", "May", "pm", "_", "x"]


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(unit=st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=5).map("".join))
def test_hostile2_item01_the_extractor_is_linear_on_any_repeated_unit(unit: str,
                                                                     scaling: Any) -> None:
    ratio = scaling.ratio(identifiers_in, _repeated(ARMED, unit))
    assert ratio < scaling.limit, (
        f"identifiers on {unit!r} * n: {scaling.growth}x the input took {ratio:.1f}x as long")


def test_hostile2_item01_huge_is_found_in_bounded_codes() -> None:
    # The code family reads at most eight parts from a start, so a run of "HUGE-" ending in
    # digits is a code of its last parts, not one 20 KB identifier.
    found = identifiers_in("HUGE-" * 4000 + "12")
    assert found == ["HUGE-" * 7 + "12"]
