"""Whether this process runs under CI, and which forge's: one answer for every part of xcompat.

The logger picks its dialect from it, the settings refuse command-line overrides under CI,
and ``xcompat build`` defaults to cibuildwheel there. A forge's CI is recognised by the
forge itself (``Forge.detect``, through the ``FORGES`` table); any other CI by ``CI`` set
to ``true``, ``1`` or ``yes``, as GitHub Actions, GitLab CI and most other services set it.
The environment is passed in, never read here.
"""

from __future__ import annotations

from collections.abc import Mapping

from xcompat.forges import FORGES


def detect_forge(env: Mapping[str, str]) -> str | None:
    """The name (a ``FORGES`` key) of the forge whose CI runs this process; None for any other place."""
    for name, forge in FORGES.items():
        if forge.detect(env):
            return name
    return None


def is_ci(env: Mapping[str, str]) -> bool:
    return detect_forge(env) is not None or str(env.get("CI", "")).lower() in ("true", "1", "yes")
