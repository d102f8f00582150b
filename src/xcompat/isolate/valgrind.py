"""``--deep valgrind``: run the tests under memcheck and keep only what each test adds.

valgrind on ``import torch`` plus one op reports ~27,600 errors, all from the interpreter
and the libraries' start-up. So everything before a test starts is baseline:

* with a C compiler and valgrind's headers (the normal case), one valgrind process runs
  all the tests. A small client library (compiled once, cached) lets a pytest plugin call
  ``VALGRIND_DO_ADDED_LEAK_CHECK`` right before and after each test and write a marker
  into the XML, so a leak is reported only if it appeared during that test, and an
  invalid read only if it happened between that test's markers;
* without them, an import-and-collect-only run is the baseline and each test runs in its
  own valgrind process; a finding counts when the baseline does not have its key.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from xcompat.errors import ToolError, UnavailableError
from xcompat.isolate.sanitizers import Finding, attribute, parse_valgrind_xml, subtract_baseline

CLIENT_SOURCE = r"""
#include <valgrind/valgrind.h>
#include <valgrind/memcheck.h>
int xcompat_on_valgrind(void) { return RUNNING_ON_VALGRIND; }
void xcompat_added_leak_check(void) { VALGRIND_DO_ADDED_LEAK_CHECK; }
void xcompat_mark(const char *text) { VALGRIND_PRINTF("%s\n", text); }
"""
CLIENT_ENV = "XCOMPAT_VALGRIND_CLIENT"

VALGRIND_FLAGS = (
    "--tool=memcheck",
    "--leak-check=full",
    "--show-leak-kinds=definite,indirect",
    "--errors-for-leak-kinds=definite,indirect",
    "--num-callers=30",
    "--xml=yes",
)
# CPython's suppression file, where distributions put it. It is tied to one interpreter
# build and often matches nothing; the baseline diff does the real work.
SUPPRESSION_CANDIDATES = (
    "/usr/lib/valgrind/python3.supp",
    "/usr/lib/x86_64-linux-gnu/valgrind/python3.supp",
    "/usr/local/lib/valgrind/python3.supp",
)


def cache_dir(env: Mapping[str, str]) -> Path:
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "xcompat"


def build_client(env: Mapping[str, str]) -> Path | None:
    """Compile the client-request library once (keyed by source hash); None without gcc/headers."""
    compiler = shutil.which(env.get("CC", "cc")) or shutil.which("gcc")
    if compiler is None:
        return None
    digest = hashlib.sha256(CLIENT_SOURCE.encode()).hexdigest()[:16]
    target = cache_dir(env) / f"valgrind-client-{digest}.so"
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "client.c"
        src.write_text(CLIENT_SOURCE)
        out = Path(tmp) / target.name
        proc = subprocess.run(
            [compiler, "-shared", "-fPIC", "-O1", "-o", str(out), str(src)],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            return None  # most likely valgrind's headers are missing: use the per-test fallback
        os.replace(out, target)
    return target


def find_suppressions() -> list[str]:
    found = [p for p in SUPPRESSION_CANDIDATES if Path(p).is_file()]
    local = Path(sys.base_prefix) / "lib" / "valgrind-python.supp"
    if local.is_file():
        found.append(str(local))
    return found


def valgrind_command(xml_path: Path, python_args: Sequence[str]) -> list[str]:
    cmd = ["valgrind", *VALGRIND_FLAGS, f"--xml-file={xml_path}"]
    cmd += [f"--suppressions={s}" for s in find_suppressions()]
    return [*cmd, sys.executable, *python_args]


def _run(cmd: list[str], env: dict[str, str], timeout_s: float | None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise ToolError(f"valgrind did not finish within {timeout_s:g}s", hint="raise --timeout") from None


def run_valgrind(
    nodeids: Sequence[str],
    *,
    args: Sequence[str] = (),
    timeout_s: float | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, list[Finding]]:
    """Findings per node id that the test itself added over the baseline."""
    env = dict(os.environ if env is None else env)
    if shutil.which("valgrind") is None:
        raise UnavailableError("valgrind is not installed", hint="apt-get install valgrind, or drop --deep")
    if not nodeids:
        return {}
    run_env = {**env, "PYTHONMALLOC": "malloc", "PYTHONFAULTHANDLER": "0"}
    # valgrind slows Python ~40x; the per-test timeout is scaled, the whole run unbounded.
    budget = timeout_s * 40 * max(len(nodeids), 1) if timeout_s else None
    common = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "xcompat.isolate.vgplugin", *args]
    client = build_client(env)
    with tempfile.TemporaryDirectory(prefix="xcompat-valgrind-") as tmp:
        if client is not None:
            xml = Path(tmp) / "all.xml"
            _run(valgrind_command(xml, [*common, *nodeids]), {**run_env, CLIENT_ENV: str(client)}, budget)
            return attribute(parse_valgrind_xml(xml))
        base_xml = Path(tmp) / "baseline.xml"
        _run(valgrind_command(base_xml, [*common, "--collect-only", *nodeids]), run_env, budget)
        baseline = [f for _, f in parse_valgrind_xml(base_xml)]
        per_test: dict[str, list[Finding]] = {}
        for index, nodeid in enumerate(nodeids):
            xml = Path(tmp) / f"test-{index}.xml"
            _run(valgrind_command(xml, [*common, nodeid]), run_env, budget)
            added = subtract_baseline([f for _, f in parse_valgrind_xml(xml)], baseline)
            if added:
                per_test[nodeid] = [replace(f, tests=(nodeid,)) for f in added]
        return per_test
