"""The composite action installs xcompat's own dependencies from a hashed lock, with --no-deps.

locks/action.in must list exactly the dependencies pyproject.toml declares (core and the build,
abi, coverage extras, hypothesis of the testing extra), minus torch, numpy and ninja, which the
matrix chooses; locks/action.txt pins every package exactly, with hashes, at versions that
satisfy those specifiers.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
LOCK_IN = ROOT / "locks" / "action.in"
LOCK = ROOT / "locks" / "action.txt"
UNLOCKED = {"torch", "numpy", "ninja"}  # the matrix's frameworks and torch's extension builder


def _requirements(lines: list[str]) -> dict[str, Requirement]:
    found: dict[str, Requirement] = {}
    for line in lines:
        line = line.split(" #", 1)[0].strip()
        if line and not line.startswith("#"):
            req = Requirement(line)
            found[canonicalize_name(req.name)] = req
    return found


LOCKED_EXTRAS = ("build", "abi", "coverage", "runner", "testing")  # every extra but torch (and the all/test bundles)


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _project() -> dict:
    return _pyproject()["project"]


def _expand(lines: list[str], extras: dict[str, list[str]]) -> list[str]:
    """Requirement lines with ``xcompat[a,b]`` self-references replaced by those extras' lines."""
    out: list[str] = []
    for line in lines:
        req = Requirement(line)
        if canonicalize_name(req.name) == "xcompat":
            for extra in sorted(req.extras):
                out += _expand(extras.get(extra, []), extras)
        else:
            out.append(line)
    return out


def _declared() -> dict[str, Requirement]:
    """What the lock must hold: xcompat's dependencies, its extras but torch, and its build backend."""
    project = _project()
    extras = project["optional-dependencies"]
    lines = list(project["dependencies"])
    for extra in LOCKED_EXTRAS:
        lines += extras.get(extra, [])
    lines += _pyproject()["build-system"]["requires"]
    declared = _requirements(_expand(lines, extras))
    return {name: req for name, req in declared.items() if name not in UNLOCKED}


def _anywhere() -> dict[str, set[str]]:
    """Every specifier pyproject.toml gives each name, in any table."""
    project = _project()
    lines = list(project["dependencies"]) + list(_pyproject()["build-system"]["requires"])
    for extra in project["optional-dependencies"].values():
        lines += extra
    found: dict[str, set[str]] = {}
    for line in lines:
        req = Requirement(line)
        found.setdefault(canonicalize_name(req.name), set()).add(str(req))
    return found


def _locked() -> dict[str, tuple[str, list[str]]]:
    """name -> (exact version, hashes) from locks/action.txt."""
    text = LOCK.read_text().replace("\\\n", " ")
    locked: dict[str, tuple[str, list[str]]] = {}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = re.match(r"^([A-Za-z0-9_.-]+)==([^\s;]+)", line)
        assert match, f"locks/action.txt: not an exact pin: {line[:80]}"
        hashes = re.findall(r"--hash=sha256:([0-9a-f]{64})", line)
        locked[canonicalize_name(match.group(1))] = (match.group(2), hashes)
    return locked


def test_lock_input_holds_every_declared_dependency() -> None:
    lock_in = {n: str(r) for n, r in _requirements(LOCK_IN.read_text().splitlines()).items()}
    missing = {n: str(r) for n, r in _declared().items() if lock_in.get(n) != str(r)}
    assert missing == {}, f"pyproject.toml declares {missing}, locks/action.in does not: edit it, then `make lock`"


def test_lock_input_names_only_what_pyproject_declares() -> None:
    anywhere = _anywhere()
    stale = [str(r) for n, r in _requirements(LOCK_IN.read_text().splitlines()).items()
             if str(r) not in anywhere.get(n, set())]
    assert stale == [], f"locks/action.in names requirements pyproject.toml does not: {stale}"


def test_every_locked_package_is_pinned_with_hashes_and_frameworks_stay_out() -> None:
    locked = _locked()
    assert len(locked) > 20
    assert not [name for name, (_, hashes) in locked.items() if not hashes]
    assert UNLOCKED.isdisjoint(locked), "torch and the matrix's frameworks must not be locked"


def test_locked_versions_satisfy_the_declared_specifiers() -> None:
    locked = _locked()
    for name, req in _requirements(LOCK_IN.read_text().splitlines()).items():
        assert name in locked, f"{name} is declared but not in locks/action.txt: run `make lock`"
        assert req.specifier.contains(Version(locked[name][0]), prereleases=True), (name, locked[name][0])


def test_the_action_installs_from_the_lock_without_a_resolver() -> None:
    setup = next(s for s in yaml.safe_load((ROOT / "action.yml").read_text())["runs"]["steps"]
                 if s.get("id") == "setup")["run"]
    assert '--require-hashes --no-deps -r "$XCOMPAT_ACTION_PATH/locks/action.txt"' in setup
    assert '--no-deps --no-build-isolation "$XCOMPAT_ACTION_PATH"' in setup
    lock_line = setup.index("locks/action.txt")
    assert lock_line < setup.index('--no-deps --no-build-isolation "$XCOMPAT_ACTION_PATH"')
