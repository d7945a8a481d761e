"""Say what to install when mas-library-standard is installed without the kernel.

Imported first by the package, so the error names the missing distribution instead of
a bare ``No module named 'mas.runtime'`` from deep inside an import.
"""

from __future__ import annotations

import importlib.util

if importlib.util.find_spec("mas.runtime") is None:
    raise ModuleNotFoundError(
        "mas-library-standard needs mas-runtime (the mas-lab kernel), which is not installed; "
        "from a mas-lab checkout: pip install -r requirements.txt"
    )
