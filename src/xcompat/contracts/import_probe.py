"""Import modules in a fresh interpreter and snapshot the libraries that process maps.

The child imports the modules with only ``--path`` folders added to its search path, then
prints its own maps (bounded) with its ``sys.path`` and interpreter folders as one JSON line:
the modules never load into xcompat's process, and the owner of each library is judged by
the child's view of what is installed.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from xcompat.contracts.bounded_run import run_tool
from xcompat.contracts.libraries import snapshot
from xcompat.contracts.maps import MAPS_LIMIT, parse_maps
from xcompat.contracts.owners import OwnerIndex
from xcompat.contracts.test_maps import TestMaps
from xcompat.errors import InputError, ToolError, UnavailableError

TIMEOUT_S = 300

_SCRIPT = r"""
import importlib, json, sys, sysconfig
out, sys.stdout = sys.stdout, sys.stderr  # modules may print on import
for name in sys.argv[2:]:
    importlib.import_module(name)
with open("/proc/self/maps", "rb") as fh:
    maps = fh.read(int(sys.argv[1]) + 1).decode("utf-8", "surrogateescape")
interp = [sys.base_prefix, sys.base_exec_prefix, sysconfig.get_config_var("LIBDIR") or ""]
out.write(json.dumps({"maps": maps, "path": sys.path + [sys.prefix], "interpreter": interp}) + "\n")
"""


def probe_imports(modules: Sequence[str], *, paths: Sequence[Path] = (), python: str | None = None,
                  project: str | None = None, cell_id: str | None = None,
                  tests: TestMaps | str | None = None) -> dict[str, object]:
    """The runtime-libraries result of a fresh interpreter that imported ``modules``, joined by
    the test processes' libraries ``tests`` (a string: why they were not read)."""
    if not modules:
        raise InputError("no module to import; give --import MODULE")
    if not os.path.isdir("/proc/self"):
        raise UnavailableError("/proc is not available: reading a process's libraries needs Linux")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONHOME", "PYTHONSTARTUP")}
    env["PYTHONPATH"] = os.pathsep.join([*map(str, paths), *filter(None, [env.get("PYTHONPATH", "")])])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # from an empty folder: `-c` puts the working folder first on sys.path, and a project's checkout
    # there would shadow the installed wheel whose libraries are the question
    with tempfile.TemporaryDirectory(prefix="xcompat-import-probe-") as empty:
        run = run_tool([python or sys.executable, "-c", _SCRIPT, str(MAPS_LIMIT), *modules], what="import probe",
                       timeout=TIMEOUT_S, env=env, cwd=Path(empty), limit=4 * MAPS_LIMIT)
    if run.returncode != 0:
        raise ToolError(f"importing {', '.join(modules)} failed (exit {run.returncode})",
                        details=run.errors.splitlines()[-15:])
    try:
        reply = json.loads(run.output.strip().splitlines()[-1])
        maps_text, sys_path, interpreter = str(reply["maps"]), list(reply["path"]), list(reply["interpreter"])
    except (ValueError, KeyError, IndexError, TypeError):
        raise ToolError("the import probe's reply is not its JSON line", details=run.errors.splitlines()[-5:]) from None
    if len(maps_text) > MAPS_LIMIT:
        raise InputError(f"the maps of the import probe are over the limit of {MAPS_LIMIT} bytes")
    owners = OwnerIndex([str(p) for p in sys_path], [str(p) for p in interpreter], project)
    doc = snapshot(parse_maps(maps_text), owners, cell_id=cell_id, tests=tests if isinstance(tests, TestMaps) else None)
    doc["sources"] = sources(modules, tests)
    return doc


def sources(modules: Sequence[str], tests: TestMaps | str | None) -> list[dict[str, object]]:
    """What the result was read from: the import snapshot, and the test processes or why not."""
    if isinstance(tests, TestMaps):
        read, detail = True, tests.describe()
    else:
        read, detail = False, f"not read: {tests or 'no test result given (--tests-result)'}"
    return [{"name": "import", "read": True, "detail": f"a fresh interpreter that imported {', '.join(modules)}"},
            {"name": "tests", "read": read, "detail": detail}]
