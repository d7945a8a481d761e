"""Say what to install when mas-library-lab is installed without the kernel or mas-library-eval.

Imported first by the package, so the error names the missing distribution instead of
a bare ``No module named 'mas.runtime'`` (or ``'mas.library.eval'``) from deep inside an
import.
"""

from __future__ import annotations

import importlib.util

for _module, _distribution in (
    ("mas.runtime", "mas-runtime (the mas-lab kernel)"),
    ("mas.library.eval", "mas-library-eval (the MCE jury its eval_mce step runs)"),
):
    if importlib.util.find_spec(_module) is None:
        raise ModuleNotFoundError(
            f"mas-library-lab needs {_distribution}, which is not installed; "
            "from a mas-lab checkout: pip install -r requirements.txt"
        )
