"""The kernel's own plugin: the last-resort answers to resolver hooks.

It registers no strategy (those live in libraries); it only makes sure every
``firstresult`` hook has an answer when no library gives one.
"""

from __future__ import annotations

from typing import Any

from mas.runtime import hookimpl


@hookimpl(trylast=True)
def mas_resolve_model_ref(ref: str, purpose: str, scope: Any) -> Any:
    """Answer with the kernel's own resolution chain from spec 000."""
    from mas.runtime.spec.model_ref import resolve_builtin

    return resolve_builtin(ref=ref, purpose=purpose, scope=scope)
