"""LiteLLM's HTTP handlers are let go at exit, while imports still work (see
:func:`mas.runtime.engine._litellm.release_clients`)."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_a_process_that_used_litellm_lets_its_clients_go_at_exit() -> None:
    # A fresh interpreter: the hook is registered by its first load_litellm, and exit
    # hooks run last-registered first, so ``check`` (registered before) sees its effect.
    script = textwrap.dedent("""
        import atexit
        def check():
            assert not litellm.in_memory_llm_clients_cache.cache_dict
            assert "module_level_aclient" not in litellm.__dict__
            print("released")
        atexit.register(check)
        from mas.runtime.engine._litellm import load_litellm
        litellm = load_litellm()
        litellm.in_memory_llm_clients_cache.set_cache("probe", object())
        assert litellm.module_level_aclient is not None  # made lazily, as a call makes it
        assert "module_level_aclient" in litellm.__dict__
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env={"LITELLM_LOCAL_MODEL_COST_MAP": "True",
                                            "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "released" in done.stdout, done.stderr[-2000:]
