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


def _declared() -> dict[str, Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = list(project["dependencies"])
    for extra in ("build", "abi", "coverage", "testing"):
        lines += project["optional-dependencies"][extra]
    lines += tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    declared = _requirements(lines)
    return {name: req for name, req in declared.items() if name not in UNLOCKED}


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


def test_lock_input_matches_pyproject() -> None:
    lock_in = _requirements(LOCK_IN.read_text().splitlines())
    declared = _declared()
    assert {n: str(r) for n, r in lock_in.items()} == {n: str(r) for n, r in declared.items()}, (
        "locks/action.in drifted from pyproject.toml: edit it, then `make lock`")


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
