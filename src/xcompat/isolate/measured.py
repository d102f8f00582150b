"""coverage.py measurements of test processes that leave by ``os._exit``.

Under ``coverage run`` (the coverage stage of ``xcompat run`` runs ``xcompat test`` that way,
with ``parallel = true``) a forked test process inherits the parent's measuring tracer, but it
ends with ``os._exit``, which runs no ``atexit`` hook, so coverage.py would never write what the
process measured. Each such process saves here first; coverage.py notices the fork and writes
a data file of its own (parallel mode names it by host and pid), which ``coverage combine``
joins afterwards. A process killed for a timeout or a crash saves nothing: its test's lines
count as not run, and its outcome is the test stage's business.

Native code built with ``--coverage`` has the same problem: gcov writes its counters from a
destructor of each instrumented library, which ``os._exit`` never runs. The coverage stage
links a small function, ``xcompat_gcov_dump`` (it calls gcov's public ``__gcov_dump``), into
every library of its instrumented build and names that build's folder in
``XCOMPAT_COVERAGE_NATIVE``; each library mapped from under it is asked to write its counters.

Nothing here imports coverage, and without ``XCOMPAT_COVERAGE_NATIVE`` nothing native is
touched: outside the coverage stage these are no-ops.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any


def measuring_coverage() -> Any:
    """coverage.py's ``Coverage`` measuring this process, if any (never imports coverage)."""
    module = sys.modules.get("coverage")
    current = getattr(getattr(module, "Coverage", None), "current", None)
    return current() if current is not None else None


def start_if_requested() -> None:
    """In a freshly started worker (spawn): measure it when ``coverage run`` asked its
    subprocesses to be measured (``COVERAGE_PROCESS_START`` names the configuration)."""
    if not os.environ.get("COVERAGE_PROCESS_START") or measuring_coverage() is not None:
        return
    try:
        import coverage
    except ImportError:
        return
    coverage.process_startup()


NATIVE_VARIABLE = "XCOMPAT_COVERAGE_NATIVE"
DUMP_FUNCTION = "xcompat_gcov_dump"


def save_coverage(what: str) -> None:
    """Write this process's measurements before it leaves by ``os._exit``. ``what`` names the
    process in the one line written when saving fails (measurements are a bonus, the test
    outcome is not: a failure here never changes it)."""
    cov = measuring_coverage()
    if cov is not None:
        try:
            cov.stop()
            cov.save()
        except Exception as exc:  # noqa: BLE001 - see above
            _say(f"xcompat: coverage data of {what} not saved: {exc}\n")
    root = os.environ.get(NATIVE_VARIABLE)
    if root:
        try:
            dump_native_counters(root)
        except Exception as exc:  # noqa: BLE001 - see above
            _say(f"xcompat: native coverage counters of {what} not written: {exc}\n")


def dump_native_counters(root: str) -> int:
    """Ask every instrumented library mapped from under ``root`` to write its gcov counters;
    how many did. Each library carries its own copy of gcov's runtime (extensions are loaded
    with ``RTLD_LOCAL``), so each is asked; a second ask of the same library writes nothing."""
    import ctypes

    prefix = os.path.join(os.path.realpath(root), "")
    done = 0
    for path in _mapped_libraries():
        if not os.path.realpath(path).startswith(prefix):
            continue
        try:
            dump = getattr(ctypes.CDLL(path), DUMP_FUNCTION)
        except (OSError, AttributeError):
            continue  # not from the instrumented build (or linked without the function)
        dump()
        done += 1
    return done


def _mapped_libraries() -> list[str]:
    """Shared libraries mapped into this process: ``/proc/self/maps`` where there is one,
    else the extension modules Python imported (a library loaded by ctypes alone is missed)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            fields = [line.split(None, 5) for line in fh]
        found = {f[5].rstrip("\n") for f in fields if len(f) == 6 and f[5].startswith("/")}
        return sorted(p for p in found if ".so" in os.path.basename(p))
    except OSError:
        pass
    suffixes = (".so", ".pyd", ".dylib")
    files = (getattr(m, "__file__", None) for m in list(sys.modules.values()))
    return sorted({f for f in files if isinstance(f, str) and f.endswith(suffixes)})


def _say(text: str) -> None:
    with contextlib.suppress(Exception):  # stderr may be gone in a dying process
        sys.stderr.write(text)
