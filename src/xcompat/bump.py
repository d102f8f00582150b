"""The one ``Bump``: how much a release's version number must grow, ordered from no change to
a major one. Configuration (the matrix's ``abi.bumps``) and results both name bumps, so the
type lives below both."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from xcompat.errors import InputError

Bump = Literal["none", "patch", "minor", "major"]
BUMP_ORDER: tuple[Bump, ...] = ("none", "patch", "minor", "major")


def bump_rank(bump: str) -> int:
    try:
        return BUMP_ORDER.index(bump)
    except ValueError:
        raise InputError(f"unknown bump {bump!r}; expected one of {', '.join(BUMP_ORDER)}") from None


def worst_bump(bumps: Iterable[str]) -> Bump:
    best: Bump = "none"
    for bump in bumps:
        if bump_rank(bump) > bump_rank(best):
            best = bump  # type: ignore[assignment]
    return best
