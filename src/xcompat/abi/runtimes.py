"""Whether a shared library carries its own copy of the C++ runtime: the rule, and the check
of a library's ELF file with xcompat's ELF reader.

torch links the shared ``libstdc++.so.6``; a library linked with a static copy of the C++
runtime has its own ``std::locale``, iostreams and ``__cxa_throw``, and the two runtimes in
one process crash on the first error message that formats a number (see
:mod:`xcompat.cxxruntime`, which refuses such compilers and kernel libraries). ``xcompat abi
links`` (xcompat.abi.links) and the build audit ask :func:`beside_torch` for every library of
a wheel that needs torch's libraries. Linux/ELF only: other platforms return "no finding".
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from pathlib import Path

TORCH_LIBRARY = re.compile(r"^lib(?:c10|torch|shm|caffe2|aoti)")  # sonames of torch's own libraries

# Defined (not merely referenced) in a shared object only when the C++ runtime itself was
# linked into it: std::locale::classic(), the exception thrower, the iostreams initialiser.
RUNTIME_SYMBOLS = {
    "_ZNSt6locale7classicEv": "std::locale::classic()",
    "__cxa_throw": "__cxa_throw",
    "_ZNSt8ios_base4InitC1Ev": "std::ios_base::Init::Init()",
}
SHARED_RUNTIMES = ("libstdc++.so", "libc++.so")


def carried_runtime(library: Path) -> str | None:
    """Why ``library`` (a shared object known to use the C++ standard library) carries its
    own C++ runtime, or None.

    Evidence, in order: it exports one of :data:`RUNTIME_SYMBOLS`; or it needs no shared
    C++ runtime at all (a static copy with hidden or stripped symbols leaves none to find).
    Reads the dynamic section and the dynamic symbol table only.
    """
    if not sys.platform.startswith("linux"):
        return None
    import struct

    from xcompat.abi.elf import ElfError, read_elf  # xcompat's one ELF reader, about 1 ms here

    try:
        lib = read_elf(library, display_name=library.name, want_fatbin=False)
    except (OSError, ElfError, struct.error) as exc:
        return f"cannot read {library.name} as ELF ({exc})"
    return runtime_finding(library.name, lib.needed, lib.exports, uses_std=True)


def beside_torch(name: str, needed: Iterable[str], exported: Iterable[str]) -> str | None:
    """For a library of a wheel (``xcompat abi links``, the build audit): why it carries its
    own C++ runtime beside torch's; None when it does not, or needs none of torch's libraries
    (then the two runtimes never meet)."""
    needed = list(needed)
    if not any(TORCH_LIBRARY.match(n) for n in needed):
        return None
    return runtime_finding(name, needed, exported, uses_std=False)


def runtime_finding(name: str, needed: Iterable[str], exported: Iterable[str], *, uses_std: bool) -> str | None:
    """The rule, on what any ELF reader found: ``needed`` (DT_NEEDED entries) and
    ``exported`` (defined dynamic symbols, raw or readable names, with or without their
    ``@version``) of the library ``name``.

    ``uses_std``: the library is known to use the C++ standard library (the kernels, the
    probe). Only then does needing no shared C++ runtime count as evidence: a third-party
    extension that happens to use no ``std::`` code needs none and carries none either.
    """
    needed = list(needed)
    names = [s.partition("@")[0] for s in exported]
    carried = [RUNTIME_SYMBOLS.get(s, s) for s in names if s in RUNTIME_SYMBOLS or s in RUNTIME_SYMBOLS.values()]
    if carried:
        return f"{name} defines {', '.join(dict.fromkeys(carried))} itself: the C++ runtime is linked in statically"
    if uses_std and not any(n.startswith(SHARED_RUNTIMES) for n in needed):
        return f"{name} needs no shared C++ runtime (DT_NEEDED: {', '.join(needed) or 'none'})"
    return None
