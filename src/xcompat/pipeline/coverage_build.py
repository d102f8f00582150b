"""The coverage stage's instrumented build of the project's native code.

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
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from xcompat.isolate.measured import DUMP_FUNCTION

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
