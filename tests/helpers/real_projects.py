"""Real PyPI projects with C extensions, their sdists fetched with ``pip download`` (a torch
extension's as the index lists it, running nothing) and cached.

    from tests.helpers.real_projects import PROJECTS, source_tree, built_wheel, installed
    project = PROJECTS["markupsafe"]
    src = source_tree(project, project.version, tmp_path)   # a fresh copy of the unpacked sdist
    wheel = built_wheel(project, project.previous)           # the previous release, built here
    site = installed(wheel)                                  # pip --target folder for PYTHONPATH

Everything downloaded or built is kept under ``${XCOMPAT_CACHE:-~/.cache/xcompat-ci}/real-projects``
(sdists, built wheels, install folders), keyed by name and version, so a second run builds
nothing. Used by the real-project test tier (tests/real) and benchmarks/isolation.py.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, kw_only=True)
class RealProject:
    name: str  # distribution name on PyPI
    import_name: str
    version: str  # the release under test
    previous: str  # the release before it: the ABI baseline
    tests: str  # where its tests live in the sdist
    in_package: bool  # tests ship inside the package (run with --pyargs against the wheel)
    extension: str  # the extension module's import name
    native_source: str = "_speedups.c"  # the extension's source, next to the package's __init__.py
    min_tests: int = 50  # its suite collects at least this many tests
    # setup.py imports torch and adds a CUDA extension when it finds a CUDA toolkit: built
    # without isolation against the installed torch, and fetched without running setup.py
    torch: bool = False


PROJECTS = {
    # tests/ next to a src/ layout; a small C speedups module
    "markupsafe": RealProject(name="markupsafe", import_name="markupsafe", version="3.0.4", previous="3.0.3",
                              tests="tests", in_package=False, extension="markupsafe._speedups"),
    # tests inside the package (simplejson/tests); a C speedups module
    "simplejson": RealProject(name="simplejson", import_name="simplejson", version="4.3.0", previous="4.2.0",
                              tests="simplejson/tests", in_package=True, extension="simplejson._speedups"),
    # tests/ with many small tests; C and C++ (double-conversion)
    "ujson": RealProject(name="ujson", import_name="ujson", version="6.1.0", previous="6.0.0",
                         tests="tests", in_package=False, extension="ujson"),
    # a PyTorch C++ extension (CPU, plus CUDA when nvcc runs); 0.1.9 is setup.py-only, 0.1.10
    # adds a pyproject.toml whose build requires torch; tests/ run torch's gradcheck on it
    "torchsort": RealProject(name="torchsort", import_name="torchsort", version="0.1.10", previous="0.1.9",
                             tests="tests", in_package=False, extension="torchsort.isotonic_cpu",
                             native_source="isotonic_cpu.cpp", min_tests=30, torch=True),
}


def cache_root() -> Path:
    root = Path(os.environ.get("XCOMPAT_CACHE") or Path.home() / ".cache" / "xcompat-ci") / "real-projects"
    root.mkdir(parents=True, exist_ok=True)
    return root


@contextmanager
def _locked(name: str) -> Iterator[None]:
    with open(cache_root() / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _run(cmd: list[str], what: str, **kwargs) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, **kwargs)
    if proc.returncode != 0:
        raise RuntimeError(f"{what} failed ({' '.join(cmd)}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def sdist(project: RealProject, version: str) -> Path:
    """The released sdist, downloaded once."""
    folder = cache_root() / "sdists"
    folder.mkdir(exist_ok=True)
    prefix = f"{project.name}-{version}.tar.gz".lower()
    with _locked("sdists"):
        found = [p for p in folder.iterdir() if p.name.lower() == prefix]
        if not found and project.torch:
            _from_index(project.name, prefix, folder)
        elif not found:
            _run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                  "--disable-pip-version-check", "-d", str(folder), f"{project.name}=={version}"],
                 f"downloading the {project.name} {version} sdist")
        found = [p for p in folder.iterdir() if p.name.lower() == prefix]
    if not found:
        raise RuntimeError(f"pip downloaded no {prefix} into {folder}")
    return found[0]


def index_url() -> str:
    """The index ``pip download`` reads: its ``index-url`` setting (environment, then the
    configuration files), else pip's own default."""
    listing = _run([sys.executable, "-m", "pip", "config", "list"], "reading pip's configuration").stdout
    values = dict(line.partition("=")[::2] for line in listing.splitlines())
    for key in (":env:.index-url", "download.index-url", "global.index-url"):
        if values.get(key):
            return values[key].strip("'\"").split()[0]
    from pip._internal.models.index import PyPI

    return PyPI.simple_url


def _from_index(name: str, filename: str, folder: Path) -> None:
    """``filename`` as the index lists it (its JSON simple API, PEP 691), checked against the
    index's sha256, saved into ``folder``.

    ``pip download`` prepares an sdist's metadata first, which runs setup.py: for a torch
    extension that imports torch and, with nvcc on PATH, takes the CUDA branch; and pip refuses
    a release whose metadata names a direct URL (torchsort 0.1.9's test extra names a git
    repository). Fetching the file the index lists runs nothing."""
    page = index_url().rstrip("/") + "/" + re.sub(r"[-_.]+", "-", name).lower() + "/"
    request = urllib.request.Request(page, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        listing = json.load(response)
    entry = next((f for f in listing["files"] if f["filename"].lower() == filename), None)
    if entry is None or "sha256" not in entry.get("hashes", {}):
        raise RuntimeError(f"{page} lists no {filename} with a sha256")
    with urllib.request.urlopen(urllib.parse.urljoin(page, entry["url"]), timeout=300) as response:
        data = response.read()
    if hashlib.sha256(data).hexdigest() != entry["hashes"]["sha256"]:
        raise RuntimeError(f"{entry['filename']} from {page} does not match the index's sha256")
    partial = folder / f".{entry['filename']}.partial"
    partial.write_bytes(data)
    partial.replace(folder / entry["filename"])


def source_tree(project: RealProject, version: str, dest: Path) -> Path:
    """A fresh, writable copy of the unpacked sdist under ``dest``."""
    with tarfile.open(sdist(project, version)) as archive:
        archive.extractall(dest, filter="data")
    (tree,) = [p for p in dest.iterdir() if p.is_dir() and p.name.lower() == f"{project.name}-{version}".lower()]
    return tree


def built_wheel(project: RealProject, version: str) -> Path:
    """The release built here into a wheel (``pip wheel``, the project's own build backend), cached."""
    folder = cache_root() / "wheels" / f"{project.name}-{version}"
    with _locked(f"wheel-{project.name}-{version}"):
        wheels = sorted(folder.glob("*.whl"))
        if not wheels:
            scratch = cache_root() / "scratch" / f"{project.name}-{version}"
            shutil.rmtree(scratch, ignore_errors=True)
            scratch.mkdir(parents=True)
            tree = source_tree(project, version, scratch)
            out = scratch / "out"
            _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-w", str(out),
                  str(tree)], f"building {project.name} {version}")
            folder.mkdir(parents=True, exist_ok=True)
            for wheel in out.glob("*.whl"):
                shutil.move(str(wheel), folder / wheel.name)
            shutil.rmtree(scratch, ignore_errors=True)
            wheels = sorted(folder.glob("*.whl"))
    if len(wheels) != 1:
        raise RuntimeError(f"expected one wheel in {folder}, found {[w.name for w in wheels]}")
    return wheels[0]


def installed(wheel: Path) -> Path:
    """A folder with ``wheel`` installed (``pip install --target``), for PYTHONPATH; cached."""
    target = cache_root() / "site" / wheel.stem
    with _locked(f"site-{wheel.stem}"):
        if not (target / ".complete").exists():
            shutil.rmtree(target, ignore_errors=True)
            _run([sys.executable, "-m", "pip", "install", "--no-deps", "--disable-pip-version-check",
                  "--target", str(target), str(wheel)], f"installing {wheel.name}")
            (target / ".complete").touch()
    return target
