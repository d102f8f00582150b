"""The stubs check: do the ``.pyi`` stubs a wheel ships describe its runtime modules of the
same version? mypy's stubtest imports the modules from the folder the wheel is installed in
and compares each stubbed object with the runtime one.

What stubtest is asked: only the modules that have a ``.pyi``. A module without one is
typed by its own source (``py.typed``); stubtest would compare that source with itself,
through decorators it cannot see through (``functools.cache`` reports ``*args`` the function
lacks), which says nothing about a stub. One gap stubtest cannot see is checked here: a
``py.typed`` package whose compiled extension module (it exports ``PyInit_<name>``) ships no
``.pyi`` promises types it does not have.
"""

from __future__ import annotations

import os
import struct
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from xcompat.contracts.bounded_run import run_tool
from xcompat.contracts.result import Finding, result_document
from xcompat.contracts.stubtest_output import parse_concise
from xcompat.errors import ToolError, UnavailableError

KIND = "contracts-stubs"
TIMEOUT_S = 600
_EXTENSION_SUFFIXES = (".so", ".pyd")


def _module_name(relative: Path) -> str:
    parts = list(relative.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _top_folders(site: Path) -> list[Path]:
    return sorted(p for p in site.iterdir() if p.is_dir() and not p.name.endswith((".dist-info", ".data"))
                  and not p.name.startswith((".", "__")))


def stubbed_modules(site: Path) -> list[str]:
    """Dotted names of the modules under ``site`` that have a ``.pyi`` (``-stubs`` packages too)."""
    found = set()
    for path in site.rglob("*.pyi"):
        rel = path.relative_to(site)
        if rel.parts[0].endswith((".dist-info", ".data")):
            continue
        name = _module_name(rel)
        top, _, rest = name.partition(".")
        found.add(f"{top.removesuffix('-stubs')}{'.' + rest if rest else ''}")
    return sorted(found)


def typed_packages(site: Path) -> list[Path]:
    return [p for p in _top_folders(site) if (p / "py.typed").is_file()]


def _exports_init(path: Path, module: str) -> bool:
    from xcompat.abi.elf import ElfError, read_elf

    try:
        lib = read_elf(path, display_name=path.name, want_fatbin=False)
    except (OSError, ElfError, struct.error):
        return False
    return any(s.partition("@")[0] == f"PyInit_{module}" for s in lib.exports)


def missing_stubs(site: Path) -> list[Finding]:
    """Extension modules of ``py.typed`` packages that ship no ``.pyi``."""
    findings = []
    for package in typed_packages(site):
        for path in sorted(package.rglob("*")):
            if not path.name.endswith(_EXTENSION_SUFFIXES) or not path.is_file():
                continue
            short = path.name.split(".", 1)[0]
            if path.with_name(short + ".pyi").exists() or not _exports_init(path, short):
                continue
            name = _module_name(path.with_name(short + ".py").relative_to(site))
            findings.append(Finding("missing-stub", f"{name} is a compiled module of a py.typed package with no "
                                    ".pyi stub", {"object": name, "problem": "no stub for a compiled module"}))
    return findings


def run_stubtest(site: Path, modules: Sequence[str], *, allowlist: Path | None = None,
                 python: str | None = None) -> tuple[int, str]:
    """stubtest's exit status and concise output on ``modules`` imported from ``site``; its
    own mypy run reads an empty configuration and a fresh cache, not the caller's."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONHOME", "PYTHONSTARTUP", "MYPYPATH")}
    env["PYTHONPATH"] = str(site)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    argv = [python or sys.executable, "-m", "mypy.stubtest", "--concise"]
    if allowlist is not None:
        argv += ["--allowlist", str(allowlist)]
    with tempfile.TemporaryDirectory(prefix="xcompat-stubtest-") as cache:
        config = Path(cache) / "mypy.ini"
        config.write_text("[mypy]\n", encoding="utf-8")
        argv += ["--mypy-config-file", str(config), *modules]
        env["MYPY_CACHE_DIR"] = cache
        run = run_tool(argv, what="stubtest", timeout=TIMEOUT_S, env=env, cwd=Path(cache))
    if "No module named mypy" in run.errors or "No module named 'mypy'" in run.errors:
        raise UnavailableError("mypy is not installed", hint="pip install 'xcompat[contracts]'")
    if run.truncated:
        raise ToolError("stubtest's output is over the limit")
    if run.returncode not in (0, 1):
        raise ToolError(f"stubtest failed (exit {run.returncode})", details=run.errors.splitlines()[-10:])
    return run.returncode, run.output if run.returncode == 0 else run.output + "\n" + run.errors


def check_stubs(site: Path, *, allowlist: Path | None = None, cell_id: str | None = None,
                python: str | None = None) -> dict[str, object]:
    """The stubs result for the wheel installed in ``site``."""
    modules = stubbed_modules(site)
    findings = missing_stubs(site)
    other: list[str] = []
    if modules:
        code, output = run_stubtest(site, modules, allowlist=allowlist, python=python)
        parsed = parse_concise(output)
        if code != 0 and not parsed.findings:
            raise ToolError("stubtest did not check the stubs", details=parsed.other[-10:])
        findings = parsed.findings + findings
        other = parsed.other
    typed = [p.name for p in typed_packages(site)]
    clean = (f"the stubs of {len(modules)} modules match their runtime" if modules or typed
             else "no stubs and no py.typed: nothing to check")
    return result_document(KIND, cell_id, findings, clean=clean,
                           extra={"modules": modules, "typed_packages": typed, "tool_messages": other})
