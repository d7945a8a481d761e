"""Root conftest: the kernel's pytest plugin and the hypothesis profiles.

``HYPOTHESIS_PROFILE=thorough`` runs the property suite with 5,000 examples per invariant;
the default profile (``make test``) runs 300.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

pytest_plugins = ["mas.runtime.testing"]

settings.register_profile(
    "default", max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "thorough", max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
