"""Running token sums that stay cheap when a message in the middle changes (issue 17).

:class:`PrefixSums` is a Fenwick (binary indexed) tree over per-message estimates:
appending, replacing one value and reading the sum of any range all cost O(log n), so
pruning a tool result deep in a 10,000-message history no longer rewrites 10,000 running
sums. :class:`~mas.runtime.context.History` keeps one; every strategy reads its ranges
through it.
"""

from __future__ import annotations

from collections.abc import Iterable


class PrefixSums:
    """Sums of a growing list of integers, with O(log n) append, set and range sum.

    :param values: the initial values, in order.
    """

    def __init__(self, values: Iterable[int] = ()) -> None:
        self._values: list[int] = []
        self._tree: list[int] = [0]  # 1-based: _tree[i] sums (i - lowbit(i), i]
        self._total = 0
        self.extend(values)

    def __len__(self) -> int:
        return len(self._values)

    @property
    def total(self) -> int:
        """Sum of every value (O(1): kept as values change)."""
        return self._total

    def value(self, index: int) -> int:
        """The value at ``index``."""
        return self._values[index]

    def values(self, start: int = 0, stop: int | None = None) -> list[int]:
        """A copy of the values of ``[start, stop)``."""
        return self._values[start:stop]

    def prefix(self, stop: int) -> int:
        """Sum of the values before ``stop`` (clamped to ``[0, len]``)."""
        size = len(self._values)
        i = 0 if stop < 0 else size if stop > size else stop  # not min() and max(): cheaper
        tree, total = self._tree, 0
        while i:
            total += tree[i]
            i &= i - 1
        return total

    def between(self, start: int, stop: int) -> int:
        """Sum of ``[start, stop)`` (0 when empty)."""
        if stop <= start:
            return 0
        # Most ranges a request reads run to the newest message, and many from the oldest.
        upper = self._total if stop >= len(self._values) else self.prefix(stop)
        return upper - self.prefix(start) if start > 0 else upper

    def append(self, value: int) -> None:
        """Add ``value`` at the end (O(log n))."""
        self._values.append(value)
        self._total += value
        i = len(self._values)
        # The new node covers (i - lowbit(i), i]: the value plus the nodes below it.
        covered = value
        low = i & -i
        j = i - 1
        stop = i - low
        while j > stop:
            covered += self._tree[j]
            j &= j - 1
        self._tree.append(covered)

    def extend(self, values: Iterable[int]) -> None:
        """Add ``values`` at the end: O(k log n) for a few, a linear rebuild for many."""
        added = list(values)
        if len(added) < 64:
            for value in added:
                self.append(value)
            return
        self._values.extend(added)
        self._total += sum(added)
        self._build()

    def _build(self) -> None:
        """Rebuild the tree from the values in one linear pass."""
        tree = [0, *self._values]
        size = len(self._values)
        for i in range(1, size + 1):  # the linear construction: push each node to its parent
            parent = i + (i & -i)
            if parent <= size:
                tree[parent] += tree[i]
        self._tree = tree

    def set(self, index: int, value: int) -> None:
        """Replace the value at ``index`` (O(log n))."""
        delta = value - self._values[index]
        self._values[index] = value
        self._total += delta
        if not delta:
            return
        i, tree, size = index + 1, self._tree, len(self._values)
        while i <= size:
            tree[i] += delta
            i += i & -i

    def drop_first(self, count: int) -> None:
        """Forget the first ``count`` values (rebuilds the tree: O(n) of what is left)."""
        if count <= 0:
            return
        # A whole new tree: the linear construction, whatever the size (appending a few
        # values one by one pays off only on a tree that is kept).
        self._values = self._values[count:]
        self._total = sum(self._values)
        self._build()


__all__ = ["PrefixSums"]
