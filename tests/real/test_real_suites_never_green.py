"""Real third-party suites run so that no test body runs are never green.

pytest reads ``--setup-only`` from ``PYTEST_ADDOPTS`` (or a project's ``addopts``), where the
option check of ``xcompat test`` does not look; pytest then says "no tests ran" while every test
leaves passing set-up and tear-down reports. Each such test must be an error, on a real suite
(simplejson's, inside its package, run with ``--pyargs`` against the built wheel), in every
isolation mode, and the same suite run normally must stay green.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers.real_projects import PROJECTS, built_wheel, installed

from xcompat.isolate.classify import BODY_NEVER_RAN

REPO = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.network]


def _run(site: Path, cwd: Path, isolation: str, **env: str) -> tuple[int, dict]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "XCOMPAT_TIER"))}
    clean["PYTHONPATH"] = os.pathsep.join([str(site), str(REPO / "src")])
    out = cwd / f"{isolation}-{len(env)}.json"
    proc = subprocess.run([sys.executable, "-m", "xcompat", "test", "simplejson.tests", "--isolate", isolation,
                           "--no-warm-torch", "--json", str(out), "--", "-p", "no:cacheprovider", "--pyargs"],
                          cwd=cwd, env={**clean, **env}, capture_output=True, text=True, timeout=600, check=False)
    assert out.is_file(), proc.stderr[-3000:]
    return proc.returncode, json.loads(out.read_text())


@pytest.mark.parametrize("isolation", ["test", "file", "none"])
def test_setup_only_from_the_environment_is_never_green_on_a_real_suite(tmp_path, isolation):
    project = PROJECTS["simplejson"]
    site = installed(built_wheel(project, project.version))
    rc, normal = _run(site, tmp_path, isolation)
    assert rc == 0 and normal["status"] == "passed" and normal["counts"]["passed"] > 200, normal["counts"]
    rc, doc = _run(site, tmp_path, isolation, PYTEST_ADDOPTS="--setup-only")
    assert rc == 1 and doc["status"] == "failed", doc["counts"]
    assert doc["counts"]["passed"] == 0
    errors = {t["nodeid"] for t in doc["tests"] if t["outcome"] == "error" and t["message"] == BODY_NEVER_RAN}
    # every test that passed normally is an error now (a test that skips itself inside its body
    # is one too: its body never ran, so it never skipped; one skipped at set-up stays skipped)
    passed = {t["nodeid"] for t in normal["tests"] if t["outcome"] == "passed"}
    assert passed <= errors and len(errors) == len(doc["tests"]) - doc["counts"]["skipped"]
