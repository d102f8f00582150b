"""One C++ runtime per process: find libraries that carry their own copy beside torch's.

torch links the shared ``libstdc++.so.6``. A compiler that links libstdc++ statically into
every shared object (a GCC built ``--with-static-standard-libraries``, a spec file, or
``-static-libstdc++`` in the flags) gives the kernel library a second copy of the C++
runtime: its own ``std::locale``, iostreams and ``__cxa_throw``. Such a library loads and
runs, until the first error message that formats a number: ``TORCH_CHECK(..., threads)``
builds an ``std::ostringstream`` with one runtime's locale facets and the other's code, and
the process dies with SIGSEGV instead of raising ``RuntimeError``.

Used by the kernels build (xcompat.kernels.build): before a cold build, a probe library
compiled and linked with the same compiler (:func:`check_compiler`, about a second) so the
build is refused before it starts, and the built or cached library's ELF file
(:func:`carried_runtime`). And by ``xcompat abi links`` (xcompat.abi.links) and the build
audit (xcompat.builder.audit) for every library of a wheel that needs torch's libraries
(:func:`beside_torch`, on their own ELF reader's result). Linux/ELF only: other
platforms return "no finding".
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from xcompat.errors import ToolError

# Defined (not merely referenced) in a shared object only when the C++ runtime itself was
# linked into it: std::locale::classic(), the exception thrower, the iostreams initialiser.
RUNTIME_SYMBOLS = {
    "_ZNSt6locale7classicEv": "std::locale::classic()",
    "__cxa_throw": "__cxa_throw",
    "_ZNSt8ios_base4InitC1Ev": "std::ios_base::Init::Init()",
}
SHARED_RUNTIMES = ("libstdc++.so", "libc++.so")

_PROBE_SOURCE = """\
#include <sstream>
#include <string>
std::string xcompat_runtime_probe(long value) { std::ostringstream out; out << value; return out.str(); }
"""


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
    from xcompat.abi.links import TORCH_LIBRARY

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


def refusal(what: str, finding: str, cxx: str) -> ToolError:
    return ToolError(
        f"{what}: {finding}. torch uses the shared libstdc++.so.6, and two C++ runtimes in one process "
        "crash (SIGSEGV) on the first error message that formats a number",
        hint=f"build with a compiler that links libstdc++ dynamically: set CXX to one (CXX is {cxx!r}), "
        "and drop -static-libstdc++ from the flags",
    )


def check_compiler(cxx: str, scratch: Path, env: Mapping[str, str]) -> None:
    """Compile and link a one-function C++ library with ``cxx`` (the command torch's build
    will use) and refuse the compiler when the result carries its own C++ runtime. A
    compiler that cannot build the probe is left to the real build to report."""
    if not sys.platform.startswith("linux"):
        return
    scratch.mkdir(parents=True, exist_ok=True)
    source = scratch / "probe.cpp"
    target = scratch / "probe.so"
    source.write_text(_PROBE_SOURCE, encoding="utf-8")
    target.unlink(missing_ok=True)
    try:
        proc = subprocess.run([*shlex.split(cxx), "-shared", "-fPIC", "-O0", "-o", str(target), str(source)],
                              capture_output=True, text=True, timeout=120, env=dict(env), check=False)
    except (OSError, subprocess.TimeoutExpired):
        return
    if proc.returncode != 0 or not target.is_file():
        return
    finding = carried_runtime(target)
    if finding is not None:
        raise refusal(f"the C++ compiler {cxx!r} links the C++ runtime into shared libraries",
                      finding.replace("probe.so", "a probe library it built"), cxx)
