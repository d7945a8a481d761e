"""IdentityMemo: a value per object and its witnesses, never another object's."""

from __future__ import annotations

from mas.runtime.context import IdentityMemo


def test_a_value_is_served_for_the_same_object_and_equal_witnesses() -> None:
    memo: IdentityMemo[int] = IdentityMemo(4)
    key = {"content": "x"}
    assert memo.get(key, "a") is None
    assert memo.put(key, 7, "a") == 7
    assert memo.get(key, "a") == 7
    assert memo.get(key, "a" + "") == 7  # equal witnesses, not only identical ones


def test_an_equal_object_or_other_witnesses_miss() -> None:
    memo: IdentityMemo[int] = IdentityMemo(4)
    key = {"content": "x"}
    memo.put(key, 7, "a")
    assert memo.get(dict(key), "a") is None  # equal, but another object
    assert memo.get(key, "b") is None
    assert memo.get(key) is None


def test_zero_is_a_value_not_a_miss() -> None:
    memo: IdentityMemo[int] = IdentityMemo(2)
    key = "text"
    memo.put(key, 0)
    assert memo.get(key) == 0


def test_a_full_memo_starts_afresh_and_holds_its_keys() -> None:
    memo: IdentityMemo[int] = IdentityMemo(3)
    keys = [[i] for i in range(3)]
    for i, key in enumerate(keys):
        memo.put(key, i)
    assert len(memo) == 3 and memo.get(keys[2]) == 2
    newest: list[int] = [3]
    memo.put(newest, 3)
    assert len(memo) == 1
    assert memo.get(newest) == 3 and memo.get(keys[0]) is None
