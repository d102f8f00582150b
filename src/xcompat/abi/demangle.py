"""Demangle C++ symbol names (Itanium ABI), in process and in bulk.

Uses ``__cxa_demangle`` from the C++ runtime this Python already has (libstdc++ or
libc++) through ``ctypes``: no subprocess, no dependency, about a microsecond a name.
When no C++ runtime can be loaded (a minimal container), names are piped through one
``c++filt`` process in a batch; when neither exists, names are returned unchanged.
A separate package (``cxxfilt``) would wrap the same function, so it is not required.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from typing import Any

# __cxa_demangle and the C library's free, as ctypes functions
_Runtime = tuple[Callable[..., Any], Callable[..., Any]]


@lru_cache(maxsize=1)
def _runtime() -> _Runtime | None:
    # Well-known names first: ctypes.util.find_library may run gcc/ldconfig (hundreds of ms).
    import itertools

    well_known = ["libstdc++.so.6", "libc++.1.dylib", "libc++.so.1", "libc++abi.dylib"]
    def searched() -> Iterator[str | None]:  # imported and run only when no well-known name loads
        import ctypes.util

        yield from (ctypes.util.find_library(x) for x in ("stdc++", "c++"))

    for cand in itertools.chain(well_known, searched()):
        if not cand:
            continue
        try:
            fn = ctypes.CDLL(cand).__cxa_demangle
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_void_p
        fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_int)]
        free = ctypes.CDLL(None).free  # the C library this process already uses
        free.argtypes = [ctypes.c_void_p]
        return fn, free
    return None


def _mangled(name: str) -> bool:
    return name.startswith(("_Z", "__Z"))


def demangle(name: str) -> str:
    """The demangled form of one symbol (version suffix ``@V`` kept), or the name itself."""
    return demangle_many([name])[0]


def demangle_many(names: Iterable[str]) -> list[str]:
    names = list(names)
    out = list(names)
    todo = [i for i, n in enumerate(names) if _mangled(n.partition("@")[0])]
    if not todo:
        return out
    rt = _runtime()
    if rt is not None:
        fn, free = rt
        status = ctypes.c_int()
        for i in todo:
            base, sep, ver = names[i].partition("@")
            if base.startswith("__Z"):
                base = base[1:]  # Mach-O keeps an extra underscore
            ptr = fn(base.encode(), None, None, ctypes.byref(status))
            if ptr and status.value == 0:
                out[i] = ctypes.string_at(ptr).decode("utf-8", "replace") + (f"@{ver}" if sep else "")
            if ptr:
                free(ptr)
        return out
    import shutil
    import subprocess

    tool = shutil.which("c++filt")
    if tool:
        bases = [names[i].partition("@")[0] for i in todo]
        proc = subprocess.run([tool], input="\n".join(bases) + "\n", capture_output=True, text=True, check=False)
        lines = proc.stdout.splitlines()
        if proc.returncode == 0 and len(lines) == len(todo):
            for i, line in zip(todo, lines, strict=True):
                _b, sep, ver = names[i].partition("@")
                out[i] = line + (f"@{ver}" if sep else "")
    return out
