"""The estimate calibration (mas.runtime.context.calibration): off by default, per model,
per message kind, and robust to bad observations."""

from __future__ import annotations

import pytest

from mas.runtime.context import DEFAULT_ESTIMATOR
from mas.runtime.context.calibration import Calibration, kind_of

PROSE = {"role": "user", "content": "words " * 200}
JSON = {"role": "tool", "tool_call_id": "c1", "content": '{"id": 12345, "v": 6789}' * 40}
CALL = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}


def _teach(calibration: Calibration, model: str, prose: float, json: float) -> None:
    """Requests whose 'provider' counts prose at ``prose`` and JSON at ``json`` × estimate."""
    for n_prose, n_json in [(1, 0), (0, 1), (2, 1), (1, 3), (3, 2)]:
        request = [PROSE] * n_prose + [JSON] * n_json
        reported = n_prose * prose * DEFAULT_ESTIMATOR.message(PROSE) \
            + n_json * json * DEFAULT_ESTIMATOR.message(JSON)
        calibration.observe(model, request, round(reported))


def test_kinds() -> None:
    assert [kind_of(m) for m in (PROSE, JSON, CALL, {"role": "assistant", "content": "x"},
                                 {"role": "system", "content": "s"}, {"role": "odd"})] == [
        "user", "tool", "tool_calls", "assistant", "system", "user"]


def test_disabled_by_default_returns_the_plain_estimate_but_still_learns() -> None:
    calibration = Calibration()
    _teach(calibration, "m", 1.0, 1.4)
    assert calibration.message("m", JSON) == DEFAULT_ESTIMATOR.message(JSON)
    assert calibration.estimate("m", [PROSE, JSON]) == DEFAULT_ESTIMATOR.messages([PROSE, JSON])
    assert calibration.ratio("m") > 1.0
    assert calibration.to_dict()["m"]["requests"] == 5


def test_enabled_it_learns_one_ratio_per_kind_and_per_model() -> None:
    calibration = Calibration(enabled=True)
    _teach(calibration, "a", 1.0, 1.4)
    _teach(calibration, "b", 0.8, 0.8)
    assert calibration.message("a", PROSE) == pytest.approx(DEFAULT_ESTIMATOR.message(PROSE),
                                                            rel=0.02)
    assert calibration.message("a", JSON) == pytest.approx(1.4 * DEFAULT_ESTIMATOR.message(JSON),
                                                           rel=0.02)
    assert calibration.message("b", JSON) == pytest.approx(0.8 * DEFAULT_ESTIMATOR.message(JSON),
                                                           rel=0.02)
    assert calibration.ratio("b") == pytest.approx(0.8, rel=0.01)
    # An unseen kind falls back to the model's overall ratio.
    assert calibration.message("b", CALL) == round(0.8 * DEFAULT_ESTIMATOR.message(CALL))


def test_too_few_or_useless_observations_change_nothing() -> None:
    calibration = Calibration(enabled=True)
    calibration.observe("m", [PROSE], 999)
    calibration.observe("m", [PROSE], 0)      # provider reported nothing: ignored
    calibration.observe("m", [], 50)          # nothing estimated: ignored
    assert calibration.ratio("m") == 1.0      # one useful request is not enough
    assert calibration.message("m", PROSE) == DEFAULT_ESTIMATOR.message(PROSE)
    assert calibration.ratio("never-seen") == 1.0


def test_tool_schemas_count_toward_the_request() -> None:
    calibration = Calibration(enabled=True, min_observations=1)
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    total = DEFAULT_ESTIMATOR.message(PROSE) + DEFAULT_ESTIMATOR.tools(tools)
    calibration.observe("m", [PROSE], total, tools=tools)
    assert calibration.ratio("m") == pytest.approx(1.0)
