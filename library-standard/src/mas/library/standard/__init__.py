"""mas-library-standard: context managers, summarizers, pruning and the offline model."""

from __future__ import annotations

from mas.library.standard import _needs_kernel  # noqa: F401  (first: names a missing kernel)
