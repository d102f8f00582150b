"""Runtimes a process must hold once: their families and the rule for a second copy.

The C++ runtime's shared names come from :mod:`xcompat.cxxruntime` (the same rule the build
audit and ``xcompat abi links`` apply), as does the test for a library that carries its own
static copy of it beside torch's. auditwheel renames the libraries it vendors
(``libgomp-a34b3233.so.1``); the hash suffix is part of each pattern.
"""

from __future__ import annotations

import os
import re

from xcompat.cxxruntime import SHARED_RUNTIMES

_HASH = r"(?:-[0-9a-f]{8})?"


def _family(*stems: str) -> re.Pattern[str]:
    return re.compile(r"^(?:" + "|".join(re.escape(s) for s in stems) + r")" + _HASH + r"\.so(?:\.|$)")


# family -> names of its libraries. Two different files of one family in one process are two
# copies of that runtime: two OpenMP runtimes fight over threads (and libiomp5 aborts with
# "OMP: Error #15" when it meets another), two libstdc++ or libgcc_s split exception and
# locale state, two libcudart keep two CUDA contexts' state, two libtorch two op registries.
FAMILIES: dict[str, re.Pattern[str]] = {
    "C++ runtime (libstdc++)": _family(SHARED_RUNTIMES[0].removesuffix(".so")),
    "C++ runtime (libc++)": _family(SHARED_RUNTIMES[1].removesuffix(".so")),
    "libgcc_s": _family("libgcc_s"),
    "OpenMP": _family("libgomp", "libiomp5", "libomp"),
    "CUDA runtime (libcudart)": _family("libcudart"),
    "libtorch": _family("libtorch", "libtorch_cpu", "libtorch_cuda", "libtorch_python", "libc10"),
}


def family_of(path: str) -> str | None:
    name = os.path.basename(path)
    return next((family for family, pattern in FAMILIES.items() if pattern.match(name)), None)


def copy_key(family: str, path: str) -> str:
    """What makes two files of ``family`` two copies: for OpenMP any two runtimes (libgomp
    beside libiomp5 is the classic case); for the others two files of the same library name
    (libtorch_cpu beside libc10 is one torch; libtorch_cpu twice is two)."""
    if family == "OpenMP":
        return family
    stem = re.sub(_HASH + r"\.so.*$", "", os.path.basename(path))
    return f"{family}:{stem}"
