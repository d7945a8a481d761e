"""``python -m mas.runtime``: the same as ``mas-ctl``, for environments without its script."""

from __future__ import annotations

from mas.runtime.cli import main

if __name__ == "__main__":
    main()
