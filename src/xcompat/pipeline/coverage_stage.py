"""The coverage stage of ``xcompat run``: a ``--coverage`` build of the project's native code,
its tests through ``xcompat test`` under coverage.py, then ``xcompat coverage collect`` and
``merge``.

The tests run exactly as the test stage runs them (the signed ``tests.timeout``,
``tests.isolation`` and pytest arguments), so a hanging test is a timeout here too instead of
a stage that never ends, and a crash ends one test process, not the stage. They run against
the instrumented build instead of the wheel; the verdict on the tests is the test stage's
alone, and a test whose outcome differs here is named as a warning of the coverage result.

What is measured: the project's packages (under ``src/`` for a src layout, else next to
``setup.py``/``pyproject.toml``) and its C/C++/Cython sources; test files (``tests``/``test``
folders, ``test_*.py``, ``*_test.py``, ``conftest.py`` and what ``tests.pytest`` names) are
left out.

Coverage is informational unless the signed matrix sets thresholds (``coverage.overall`` or
``coverage.diff``): then it is required. So a stage that cannot measure (the tools are not
installed, the instrumented build failed, no tests ran) is ``skipped`` with the reason, and
``failed`` with the same reason when thresholds are set.

The instrumented build is made as the run's build is: in the same private copy of the sources
(``xcompat.builder.sources.copy_sources``: a ``build/``, egg-info or other leftover in the
checkout is never used, and the checkout is never written) and with the same toolchain
environment for the cell's device backend (``xcompat.builder.toolchain``: a CPU cell's build sees
no ``nvcc`` and no ``CUDA_HOME``, so a torch extension does not add its CUDA part).

It is cached under ``${XCOMPAT_CACHE:-~/.cache/xcompat}/coverage-builds`` keyed by that copy,
the device backend, Python, torch and compiler, and never written to after it is built: each
run copies it and sends its ``.gcda`` files into the copy with ``GCOV_PREFIX``, so counts never
leak from one run into the next.
"""

from __future__ import annotations

import fcntl
import glob
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xcompat import jsonio
from xcompat.isolate.measured import DUMP_FUNCTION, NATIVE_VARIABLE
from xcompat.pipeline.local import StageResult, load_json

if TYPE_CHECKING:
    from xcompat.pipeline.runner import Stages

INSTALL_HINT = "pip install 'xcompat[coverage]'"
_SKIP_DIRS = {"__pycache__", "build", "dist", ".pytest_cache", ".xcompat-out", ".git", ".tox", ".nox", ".venv",
              "venv", "node_modules"}
_SKIP_SUFFIXES = {".so", ".pyd", ".o", ".gcda", ".gcno"}
_NATIVE_SUFFIXES = {".c", ".cc", ".cpp", ".cxx", ".C", ".pyx", ".cu"}
# Folders of tests inside a package, and the names pytest's default discovery gives test files.
TEST_FOLDERS = frozenset({"tests", "test"})
# How many tests with a different outcome under coverage a warning names one by one.
NAMED_DIFFERENCES = 20

# Linked into every library of the instrumented build: a test process leaves by os._exit, which
# skips the destructor gcov writes its counters from (xcompat.isolate.measured calls this).
_DUMP_SOURCE = f"""\
extern void __gcov_dump(void);
__attribute__((visibility("default"))) void {DUMP_FUNCTION}(void) {{ __gcov_dump(); }}
"""


def cache_dir() -> Path:
    return Path(os.environ.get("XCOMPAT_CACHE") or Path.home() / ".cache" / "xcompat") / "coverage-builds"


def _tool(argv: list[str]) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return "absent"


def _project_files(project: Path) -> Iterable[tuple[Path, Path]]:
    """(path, relative path) of the project's own files: no build output, caches or VCS data.

    Folder links are followed (the copy the build works in follows them too: a project may
    share its C sources with another through one), each real folder once."""
    seen: set[str] = set()
    found: list[tuple[Path, Path]] = []
    for folder, dirs, files in os.walk(project, followlinks=True):
        real = os.path.realpath(folder)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for name in files:
            path = Path(folder, name)
            if path.suffix not in _SKIP_SUFFIXES and path.is_file():
                found.append((path, path.relative_to(project)))
    return sorted(found, key=lambda item: item[1])


def _copied_files(copy: Path) -> list[tuple[Path, Path]]:
    """(path, relative path) of every file of a source copy but its private git repository."""
    found: list[tuple[Path, Path]] = []
    for folder, dirs, files in os.walk(copy):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        found += [(Path(folder, name), Path(folder, name).relative_to(copy)) for name in files]
    return sorted(found, key=lambda item: item[1])


def project_key(copy: Path, toolchain: str = "") -> str:
    """The cache key of the instrumented build of the source copy ``copy``: its files, the
    toolchain it is built with (device backend, CUDA toolkit), Python, torch and compiler."""
    from importlib import metadata

    digest = hashlib.sha256()
    try:
        torch_version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch_version = "none"
    digest.update(f"{sys.version}|{torch_version}|{_tool(['gcc', '-dumpfullversion'])}|O0-coverage|{toolchain}"
                  .encode())
    digest.update(_DUMP_SOURCE.encode())
    for path, rel in _copied_files(copy):
        digest.update(str(rel).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def build_with_coverage(project: Path, log_path: Path, *, native: bool = True,
                        device: str | None = None) -> Path:
    """An in-place ``--coverage -O0`` build of ``project`` (setuptools ``build_ext``), cached.

    ``device``: the cell's device backend, which decides the variant built as it does for the
    wheel (``xcompat build --device``); None: as ``xcompat build`` decides for no cell, from the
    torch the project builds against. ``native=False`` (nothing to compile): the copy of the
    sources alone."""
    from xcompat.builder.native import NativeOptions, device_backend
    from xcompat.builder.sources import copy_sources
    from xcompat.builder.toolchain import toolchain_for
    from xcompat.builder.tools import tool_env

    project = Path(project).resolve()
    cache = cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    # The copy is made first, beside the cache entries (one file system, so it moves into
    # place), and the key is read from it: what is keyed is exactly what is built.
    staging = Path(tempfile.mkdtemp(prefix=f".{project.name}-", dir=cache))
    try:
        copied = copy_sources(project, staging / "src")
        backend, why = device_backend(None, NativeOptions(device=device), project)
        env = tool_env()
        toolchain = toolchain_for(backend, env, staging / "toolchain")
        if toolchain is not None:
            env = toolchain.env
        summary = f"{why}; {toolchain.summary}" if toolchain is not None else why
        key = project_key(copied, f"{backend}|{env.get('CUDA_HOME', '') if backend == 'cuda' else ''}")
        root = cache / f"{project.name}-{key}"
        with open(cache / f".{project.name}-{key}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            built = (root / ".built").is_file()
            with open(log_path, "a", encoding="utf-8") as fh:
                fh.write(f"# xcompat: sources of {project} copied to {root / 'src'}"
                         f"{' (built before: reused)' if built else ''}\n# xcompat: {summary}\n")
            if not built:
                shutil.rmtree(root, ignore_errors=True)
                root.mkdir()
                os.replace(copied, root / "src")
                if native:
                    _compile_native(root, root / "src", log_path, env)
                (root / ".built").write_text(key)
        return root / "src"
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _compile_native(root: Path, src: Path, log_path: Path, base: Mapping[str, str]) -> None:
    """``build_ext --inplace`` with ``--coverage -O0`` in ``src``, in the environment ``base``
    (the cell's toolchain)."""
    dump_c = root / "xcompat_gcov_dump.c"
    dump_c.write_text(_DUMP_SOURCE)
    dump_o = root / "xcompat_gcov_dump.o"
    cc = base.get("CC") or "gcc"
    # torch's ninja builds compile sources by absolute path, so gcov would name the cache's
    # files, which lie outside the copy each run measures, and gcovr drops them. Recorded
    # relative to the build folder they are found in whichever copy is measured (GCC 12+; a
    # compiler without the option, or a path CFLAGS cannot carry, builds without it).
    prefix_map = [f"-fprofile-prefix-map={src}=."] if not any(c.isspace() for c in str(src)) else []
    flags: list[str] = []
    made = False
    with open(log_path, "ab") as fh:
        for flags in ([*prefix_map], []) if prefix_map else ([],):
            try:
                made = subprocess.run([cc, "-c", "-fPIC", "-O0", *flags, str(dump_c), "-o", str(dump_o)], stdout=fh,
                                      stderr=subprocess.STDOUT, env=dict(base), check=False).returncode == 0
            except OSError:
                made = False
            if made:
                break
    if not made:
        raise RuntimeError(f"no C compiler ({cc}) for the instrumented build; see {log_path.name}")
    cflags = " ".join(["--coverage", "-O0", *flags])
    env = {**base, "CFLAGS": cflags, "CXXFLAGS": cflags,
           "LDFLAGS": f"--coverage {dump_o}", "SAMPLE_EXT_CUDA": "0", "MAX_JOBS": base.get("MAX_JOBS", "2")}
    setup = ["setup.py"] if (src / "setup.py").is_file() else ["-c", "from setuptools import setup; setup()"]
    with open(log_path, "ab") as fh:
        proc = subprocess.run([sys.executable, *setup, "build_ext", "--inplace", "--build-temp", "build/temp"],
                              cwd=src, env=env, stdout=fh, stderr=subprocess.STDOUT, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"the instrumented build (setuptools build_ext --inplace) failed with exit "
                           f"{proc.returncode}; see {log_path.name}")


@dataclass(frozen=True, kw_only=True)
class Layout:
    """Where a project's importable code is, and what of it is measured."""

    root: str  # the folder its packages are imported from: "" (flat) or "src"
    packages: tuple[str, ...]  # import names of the packages measured
    modules: tuple[str, ...]  # top-level modules measured (src layout only)
    native: bool  # C, C++, Cython or CUDA sources to build with --coverage

    @property
    def python(self) -> tuple[str, ...]:
        return self.packages + self.modules


def project_layout(project: Path) -> Layout:
    """The src layout when ``src/`` holds a package or module, else the flat layout; tests
    folders are never packages to measure (tests inside a package are left out by file)."""
    native = any(rel.suffix in _NATIVE_SUFFIXES for _, rel in _project_files(project))
    src = project / "src"
    src_packages = _packages(src)
    src_modules = sorted(p.stem for p in src.glob("*.py") if not _is_test_file(p)) if src.is_dir() else []
    if src_packages or src_modules:
        return Layout(root="src", packages=tuple(src_packages), modules=tuple(src_modules), native=native)
    return Layout(root="", packages=tuple(_packages(project)), modules=(), native=native)


def _packages(folder: Path) -> list[str]:
    if not folder.is_dir():
        return []
    return sorted(p.parent.name for p in folder.glob("*/__init__.py")
                  if p.parent.name not in TEST_FOLDERS and p.parent.name.isidentifier())


def _is_test_file(path: Path) -> bool:
    name = path.name
    return name == "conftest.py" or (name.startswith("test_") and name.endswith(".py")) or name.endswith("_test.py")


def omitted_test_files(import_root: Path, layout: Layout, extra: Iterable[Path] = ()) -> list[Path]:
    """The Python files under the measured packages that are tests, and those under ``extra``
    (what ``tests.pytest`` names)."""
    out: set[Path] = set()
    for package in layout.packages:
        for path in (import_root / package).rglob("*.py"):
            rel = path.relative_to(import_root / package)
            if set(rel.parts[:-1]) & TEST_FOLDERS or _is_test_file(path):
                out.add(path)
    for target in extra:
        if target.is_dir():
            out.update(target.rglob("*.py"))
        elif target.suffix == ".py":
            out.add(target)
    return sorted(out)


def coverage_rc(path: Path, *, data_file: Path, layout: Layout, omit: Iterable[Path]) -> Path:
    """coverage.py's configuration for the run: parallel data files (every test process writes
    its own), the project's packages by import name, its test files left out by exact path."""
    lines = ["[run]", "parallel = true", f"data_file = {data_file}", "source_pkgs ="]
    lines += [f"    {name}" for name in layout.python]
    lines += ["omit ="]
    # Exact paths (glob characters escaped): a pattern such as */tests/* would also match a
    # checkout that happens to live under a folder named tests.
    lines += [f"    {glob.escape(str(p))}" for p in omit]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def missing_tools(layout: Layout) -> list[str]:
    """The coverage tools this project needs that this Python lacks."""
    missing = []
    if layout.python and importlib.util.find_spec("coverage") is None:
        missing.append("coverage.py")
    if layout.native and shutil.which("gcovr") is None and importlib.util.find_spec("gcovr") is None:
        missing.append("gcovr")
    return missing


def _thresholds(stages: Stages) -> list[str]:
    """coverage.overall / coverage.diff of the resolved settings (the stage does not re-read the matrix)."""
    c = stages.settings.coverage
    out: list[str] = []
    if c.overall is not None:
        out += ["--threshold-overall", str(c.overall)]
    if c.diff is not None:
        out += ["--threshold-diff", str(c.diff)]
    return out


class _Unmeasured(Exception):
    """Coverage could not be measured; the message says why and what to do."""

    def __init__(self, reason: str, log: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.log = log


def run_coverage(stages: Stages) -> StageResult:
    from xcompat.results.required import coverage_requirement

    requirement = coverage_requirement(stages.settings)
    work = stages.pipe.path(".coverage-work")
    try:
        return _measure(stages, work)
    except _Unmeasured as exc:
        if requirement.required:
            return StageResult(name="coverage", status="failed", log=exc.log,
                               detail=f"{exc.reason}; coverage is required: {requirement.reason}")
        return StageResult(name="coverage", status="skipped", detail=exc.reason, log=exc.log)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _measure(stages: Stages, work: Path) -> StageResult:
    pipe = stages.pipe
    project = stages.cfg.project
    found = stages.test_targets()  # tests.pytest / tests.pytest-args, as the test stage runs them
    if isinstance(found, StageResult):
        raise _Unmeasured(f"not measured: no tests to run ({found.detail})")
    targets, pytest_args = found
    layout = project_layout(project)
    if not layout.python and not layout.native:
        raise _Unmeasured("not measured: no Python package (under src/ or the project folder) and no C, C++ "
                          "or Cython source was found")
    missing = missing_tools(layout)
    if missing:
        raise _Unmeasured(f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed "
                          f"({INSTALL_HINT})")
    log_path = pipe.path("logs", "coverage-build.log")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        device = next((c.get("backend") for c in stages.cells if c["id"] == stages.cell_id), None)
        built = build_with_coverage(project, log_path, native=layout.native, device=device)
    except RuntimeError as exc:
        raise _Unmeasured(f"not measured: {exc}", log="logs/coverage-build.log") from None
    copy = work / "src"
    shutil.copytree(built, copy, symlinks=True)
    import_root = copy / layout.root if layout.root else copy
    cell = stages.cell_id or "local"
    pyargs = "--pyargs" in pytest_args
    # the same tests, from the coverage build's copy of the tree (module names with --pyargs)
    where = targets if pyargs else [str(copy / Path(t).relative_to(project)) for t in targets]
    named = [import_root.joinpath(*t.split(".")) for t in targets] if pyargs else [Path(w) for w in where]
    data = work / "data" / ".coverage"
    data.parent.mkdir()
    existing = os.environ.get("PYTHONPATH")
    addopts = os.environ.get("PYTEST_ADDOPTS")
    env: dict[str, str] = {
        # prepended: xcompat itself may be importable only through the caller's PYTHONPATH
        "PYTHONPATH": str(import_root) + (os.pathsep + existing if existing else ""),
        "PYTHONDONTWRITEBYTECODE": "1",
        # pytest's plugins as in the test stage, which turns the cache plugin off
        "PYTEST_ADDOPTS": (addopts + " " if addopts else "") + "-p no:cacheprovider",
    }
    if layout.native:
        strip = len(built.parts) - 2  # folders above "src" in the compile-time paths (parts[0] is "/")
        env.update({"GCOV_PREFIX": str(work), "GCOV_PREFIX_STRIP": str(strip), NATIVE_VARIABLE: str(copy)})
    runner: list[str] = [sys.executable]
    if layout.python:
        rc = coverage_rc(work / "coveragerc", data_file=data, layout=layout,
                         omit=omitted_test_files(import_root, layout, named))
        runner += ["-m", "coverage", "run", f"--rcfile={rc}"]
        env["COVERAGE_PROCESS_START"] = str(rc)  # spawned test processes (macOS) start measuring too
    t = stages.settings.tests
    outcomes = work / "tests.json"
    argv = [*runner, "-m", "xcompat", "test", *where, "--isolate", t.isolation, "--timeout", str(t.timeout),
            "--json", str(outcomes)]
    if stages.cell_id:
        argv += ["--cell-id", stages.cell_id]
    if pytest_args:
        argv += ["--", *pytest_args]
    run = pipe.run_command("coverage-tests", argv, env=env, cwd=work)
    if run.exit_code not in (0, 1) or not outcomes.is_file():
        raise _Unmeasured(f"not measured: the tests did not run under coverage ({run.detail})", log=run.log)
    measured_run = load_json(outcomes)
    uncollected = collection_failure(measured_run)
    if uncollected:
        # An import that fails only here (the instrumented build, the package imported from the
        # source tree) leaves nothing measured worth a percentage.
        raise _Unmeasured(f"not measured: the tests could not be collected under coverage ({uncollected})",
                          log=run.log)
    ran = measured_run.get("summary") if isinstance(measured_run, dict) else None
    warnings = outcome_differences(load_json(pipe.path("test.json")), measured_run,
                                   anchors=_anchors(targets) if pyargs else ())

    inputs: list[str] = []
    if layout.python:
        combine = pipe.run_command("coverage-combine", [sys.executable, "-m", "coverage", "combine", f"--rcfile={rc}",
                                                        "-q"], cwd=work)
        if combine.status != "passed" or not data.is_file():
            raise _Unmeasured(f"not measured: no coverage.py data to combine ({combine.detail})", log=combine.log)
        inputs += ["--python-data", str(data)]
    if layout.native:
        inputs += ["--gcov-root", str(copy)]
    # An input of the merge, not a result: the merged coverage.json is the stage's one result
    # (a hidden folder, which results are never read from).
    cell_file = pipe.path(".inputs", "coverage-cell.json")
    collect = pipe.run_command("coverage-collect", pipe.xcompat(
        "coverage", "collect", "--cell-id", cell, *inputs, "--source-root", project, "--map", f"{copy}=.",
        "--out", cell_file), outputs=[cell_file])
    if collect.status != "passed":
        raise _Unmeasured(f"not measured: collecting the data failed ({collect.detail})", log=collect.log)
    if warnings:
        document = jsonio.read_json(cell_file, schema="coverage-cell")
        document["warnings"] = [*document.get("warnings", []), *warnings]
        jsonio.write_json(cell_file, document, schema="coverage-cell")
    merged = pipe.path("coverage")
    merge = pipe.run_command("coverage", pipe.xcompat(
        "coverage", "merge", cell_file, "--repo", project, *_thresholds(stages), "--out-dir", merged),
        outputs=[merged / "coverage.json"])
    if merge.status not in ("passed", "failed") or not (merged / "coverage.json").is_file():
        raise _Unmeasured(f"not measured: merging the data failed ({merge.detail})", log=merge.log)
    if merge.status == "passed":
        # The run's summary line: how the tests went here (a timeout is one here too), and
        # whether any went otherwise than in the test stage.
        merge.detail = f"tests under coverage: {ran}" if ran else ""
        if warnings:
            merge.detail += (f"; {len(warnings)} warning(s) in coverage/coverage.md, first: {warnings[0]}")
    return merge


def _records(document: Any) -> list[Mapping[str, Any]]:
    tests = document.get("tests") if isinstance(document, Mapping) else None
    return [t for t in tests if isinstance(t, Mapping)] if isinstance(tests, list) else []


def collection_failure(document: Any) -> str | None:
    """The first file that could not be collected, as ``FILE: why``, when that left no test to
    run (pytest then runs none, unless told to continue); else None."""
    failed = [t for t in _records(document)
              if t.get("outcome") == "error" and str(t.get("message", "")).startswith("collection failed")]
    if not failed or len(failed) < len(_records(document)):
        return None
    first = failed[0]
    return f"{first.get('nodeid')}: {first.get('message')}"


def _anchors(targets: Iterable[str]) -> tuple[str, ...]:
    """The top-level package of each ``--pyargs`` target: node ids are compared from there on."""
    return tuple(dict.fromkeys(t.split(".")[0] + "/" for t in targets))


def _test_key(nodeid: str, anchors: Iterable[str]) -> str:
    """A node id as both stages see it. With ``--pyargs`` the test stage imports the tests from
    the installed wheel and this stage from the instrumented copy, so the path before the
    package differs (``.site/pkg/tests/...`` and ``src/pkg/tests/...``)."""
    path, sep, rest = nodeid.partition("::")
    for anchor in anchors:
        at = ("/" + path).find("/" + anchor)
        if at >= 0:
            path = path[at:]
            break
    return path + sep + rest


def _outcomes(document: Any, anchors: Iterable[str]) -> dict[str, str]:
    return {_test_key(str(t.get("nodeid")), anchors): str(t.get("outcome"))
            for t in _records(document) if isinstance(t.get("nodeid"), str)}


def outcome_differences(test_stage: Any, under_coverage: Any, *, anchors: Iterable[str] = ()) -> list[str]:
    """Warnings naming each test whose outcome under coverage differs from the test stage's
    (first ``NAMED_DIFFERENCES`` by name, then a count)."""
    from xcompat.results.kinds import PASSING_OUTCOMES

    before = _outcomes(test_stage, anchors)
    after = _outcomes(under_coverage, anchors)
    if not before:
        return []
    differ = []
    for key in sorted(before.keys() & after.keys()):
        was, now = before[key], after[key]
        if was == now or (was in PASSING_OUTCOMES and now in PASSING_OUTCOMES):
            continue
        differ.append(f"{key}: {was} in the test stage, {now} under coverage (the verdict is the test stage's)")
    for key in sorted(after.keys() - before.keys()):
        if after[key] not in PASSING_OUTCOMES and after[key] != "skipped":
            differ.append(f"{key}: {after[key]} under coverage, and not in the test stage's results")
    if len(differ) > NAMED_DIFFERENCES:
        rest = len(differ) - NAMED_DIFFERENCES
        differ = differ[:NAMED_DIFFERENCES] + [f"and {rest} more test(s) with another outcome under coverage"]
    return differ
