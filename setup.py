"""Dependencies of the ``mas-lab`` meta-distribution: the four siblings, from this checkout.

They are not on a package index, so each is named by the file URL of its folder; the URL
is computed here because pyproject.toml cannot hold a path relative to itself.
"""

from __future__ import annotations

from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent
SIBLINGS = {
    "mas-runtime": "kernel",
    "mas-library-standard": "library-standard",
    "mas-library-eval": "library-eval",
    "mas-library-lab": "library-lab",
}

setup(install_requires=[f"{name} @ {(HERE / d).as_uri()}" for name, d in SIBLINGS.items()])
