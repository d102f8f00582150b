"""The action's gate stage reads the trust inputs where the plan stage does: the revoked list under
project-dir, and the trust list from the pull request's base commit when no trust-ref is given."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from tests.helpers.action import REPO_ROOT, Repo, expressions_available, run_composite_action
from tests.integration.action.test_cli_consistency import SHIM

pytestmark = pytest.mark.skipif(expressions_available() is not None,
                                reason=f"composite action runner unavailable: {expressions_available()}")


def _gate_argv(tmp_path: Path, inputs: dict[str, str], github: dict | None = None) -> list[str]:
    shim = tmp_path / "bin" / "python"
    shim.parent.mkdir()
    shim.write_text(SHIM.format(python=sys.executable))
    shim.chmod(0o755)
    workspace = tmp_path / "ws"
    project = workspace / "proj"
    project.mkdir(parents=True)
    Repo(workspace).commit()
    (workspace / ".xcompat-out").mkdir()
    (workspace / ".xcompat-out" / "plan.json").write_text("{}")
    log = tmp_path / "argv.jsonl"
    log.touch()
    run_composite_action(REPO_ROOT, {"stage": "gate", "python": str(shim), "install": "false", "project-dir": "proj",
                                     **inputs}, workspace=workspace, github=github,
                         env={"XCOMPAT_ARGV_LOG": str(log)})
    calls = [json.loads(line)["argv"] for line in log.read_text().splitlines()]
    gates = [argv for argv in calls if argv[:1] == ["gate"]]
    assert len(gates) == 1, calls
    return gates[0]


def test_revoked_list_is_resolved_under_project_dir(tmp_path: Path) -> None:
    argv = _gate_argv(tmp_path, {"revoked": ".xcompat/revoked_keys"})
    assert argv[argv.index("--revoked") + 1] == "proj/.xcompat/revoked_keys"
    assert argv[argv.index("--allowed-signers") + 1] == "proj/.xcompat/allowed_signers"


def test_pull_requests_read_the_trust_list_from_their_base_commit(tmp_path: Path) -> None:
    base = "0" * 40
    argv = _gate_argv(tmp_path, {}, github={"event_name": "pull_request",
                                            "event": {"pull_request": {"base": {"sha": base}, "number": 3}}})
    assert argv[argv.index("--trust-ref") + 1] == base
    assert "--revoked" not in argv  # the default list next to allowed_signers applies without a flag


def test_an_explicit_trust_ref_wins(tmp_path: Path) -> None:
    argv = _gate_argv(tmp_path, {"trust-ref": "origin/main"},
                      github={"event_name": "pull_request", "event": {"pull_request": {"base": {"sha": "1" * 40}}}})
    assert argv[argv.index("--trust-ref") + 1] == "origin/main"
