"""PrefixSums against a plain list: every operation, in any order, gives the same sums."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mas.runtime.context.prefix_sums import PrefixSums

VALUES = st.integers(0, 10_000)
OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), VALUES),
        st.tuples(st.just("extend"), st.lists(VALUES, max_size=150)),  # both extend paths
        st.tuples(st.just("set"), st.integers(0, 400), VALUES),
        st.tuples(st.just("drop_first"), st.integers(0, 50)),
    ),
    max_size=40,
)


@given(st.lists(VALUES, max_size=200), OPERATIONS, st.data())
def test_every_range_sum_and_the_total_match_a_plain_list(
    initial: list[int], operations: list[tuple], data: st.DataObject
) -> None:
    sums, plain = PrefixSums(initial), list(initial)
    for name, *args in operations:
        if name == "append":
            sums.append(args[0])
            plain.append(args[0])
        elif name == "extend":
            sums.extend(args[0])
            plain.extend(args[0])
        elif name == "set" and plain:
            index = args[0] % len(plain)
            sums.set(index, args[1])
            plain[index] = args[1]
        elif name == "drop_first":
            sums.drop_first(args[0])
            del plain[: max(args[0], 0)]
        assert sums.total == sum(plain)
        assert len(sums) == len(plain)
    for _ in range(5):
        start = data.draw(st.integers(-3, len(plain) + 3))
        stop = data.draw(st.integers(-3, len(plain) + 3))
        lo, hi = min(max(start, 0), len(plain)), min(max(stop, 0), len(plain))
        assert sums.between(start, stop) == (sum(plain[lo:hi]) if hi > lo else 0)
        assert sums.prefix(stop) == sum(plain[:hi])
