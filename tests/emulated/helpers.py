"""Lanes and native runs shared by the emulated tier's tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.helpers.emulation import unavailable
from xcompat.emulation.lane import Lane, open_lane
from xcompat.errors import XcompatError


def lane(name: str, floor: str | None = None) -> Lane:
    try:
        return open_lane(name, floor=floor)
    except XcompatError as err:
        unavailable(f"no {name} lane on this machine: {err}")
        raise


def outcomes(result: Path) -> dict[str, str]:
    document: dict[str, Any] = json.loads(result.read_text(encoding="utf-8"))
    return {t["nodeid"]: t["outcome"] for t in document["tests"]}


def native_outcomes(project: Path, workdir: Path, targets: list[str], env: dict[str, str] | None = None, *,
                    isolation: bool = False) -> dict[str, str]:
    """The same tests on the host, from a wheel built the ordinary way (``isolation``: pip's
    isolated build, for a project whose build requirements this venv lacks)."""
    import os
    import zipfile

    wheels = workdir / "native-wheels"
    flags = [] if isolation else ["--no-build-isolation"]
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", *flags,
                    "-w", str(wheels), str(project)], check=True, env={**os.environ, **(env or {})})
    site = workdir / "native-site"
    zipfile.ZipFile(next(wheels.glob("*.whl"))).extractall(site)
    result = workdir / "native.json"
    subprocess.run([sys.executable, "-m", "xcompat", "test", *targets, "--isolate", "test", "--json", str(result)],
                   cwd=project, env={**os.environ, "PYTHONPATH": str(site), "PYTHONSAFEPATH": "1"},
                   capture_output=True, text=True, check=False)
    return outcomes(result)
