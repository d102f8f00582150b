"""Whether this process runs under CI, and which forge's: one answer for every part of xcompat.

The logger picks its dialect from it, the settings refuse command-line overrides under CI,
``xcompat build`` defaults to cibuildwheel there, and each forge of ``xcompat.forges``
answers ``Forge.detect`` from here. A forge's CI is recognised by the variable it sets
(:data:`FORGE_MARKERS`); any other CI by ``CI`` set to ``true``, ``1`` or ``yes``, as GitHub
Actions, GitLab CI and most other services set it. The environment is passed in, never read here.

This module sits below every other part of xcompat (the logger imports it at every start):
it names the forges' CI markers itself instead of asking ``xcompat.forges``.
"""

from __future__ import annotations

from collections.abc import Mapping

# The variable and value each forge's CI sets, keyed by the forge's name in
# ``xcompat.forges.FORGES``; a forge added there adds its marker here.
FORGE_MARKERS: dict[str, tuple[str, str]] = {
    "github": ("GITHUB_ACTIONS", "true"),
    "gitlab": ("GITLAB_CI", "true"),
}


def under_forge_ci(forge: str, env: Mapping[str, str]) -> bool:
    """Whether ``env`` carries the CI marker of the forge named ``forge``."""
    marker = FORGE_MARKERS.get(forge)
    return marker is not None and env.get(marker[0]) == marker[1]


def detect_forge(env: Mapping[str, str]) -> str | None:
    """The name (a ``FORGES`` key) of the forge whose CI runs this process; None for any other place."""
    for name in FORGE_MARKERS:
        if under_forge_ci(name, env):
            return name
    return None


def is_ci(env: Mapping[str, str]) -> bool:
    return detect_forge(env) is not None or str(env.get("CI", "")).lower() in ("true", "1", "yes")
