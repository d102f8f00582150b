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
(:func:`carried_runtime`). And by the build audit (xcompat.builder.audit) for every library
of a wheel that needs torch's libraries (:func:`beside_torch`, on their own ELF reader's
result). The rule itself and the ELF check are :mod:`xcompat.abi.runtimes`, where ``xcompat
abi links`` takes them from. Linux/ELF only: other platforms return "no finding".
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from xcompat.abi.runtimes import (
    RUNTIME_SYMBOLS,
    SHARED_RUNTIMES,
    beside_torch,
    carried_runtime,
    runtime_finding,
)
from xcompat.errors import ToolError

# The rule lives with xcompat's ELF reader (xcompat.abi.runtimes); named here too for the
# kernels build and the build audit, which take the whole of the check from this module.
__all__ = [
    "RUNTIME_SYMBOLS",
    "SHARED_RUNTIMES",
    "beside_torch",
    "carried_runtime",
    "check_compiler",
    "refusal",
    "runtime_finding",
]

_PROBE_SOURCE = """\
#include <sstream>
#include <string>
std::string xcompat_runtime_probe(long value) { std::ostringstream out; out << value; return out.str(); }
"""


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
