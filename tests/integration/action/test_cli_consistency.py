"""Every xcompat command line the action builds parses with the real CLI (GitLab: test_gitlab_pipeline.py).

The commands are owned by their stages and change; these tests catch an option the action or a
template passes that the command no longer has (or never had), without running the stages.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from tests.helpers.action import (
    REPO_ROOT,
    Repo,
    expressions_available,
    run_composite_action,
)

SHIM = """#!{python}
# Stands in for the venv's python: `-I -m xcompat ...` is parsed by the real CLI and logged, not run.
import json, os, sys
args = sys.argv[1:]
if args[:3] == ["-I", "-m", "xcompat"]:
    argv = args[3:]
    from xcompat.cli import build_parser
    try:
        namespace = build_parser(argv).parse_args(argv)
        ok = getattr(namespace, "_module", None) is not None
    except SystemExit:
        ok = False
    with open(os.environ["XCOMPAT_ARGV_LOG"], "a", encoding="utf-8") as fh:
        fh.write(json.dumps({{"argv": argv, "ok": ok}}) + "\\n")
    if ok and argv[:1] == ["stage"]:
        # `xcompat stage` runs: the commands it starts come back through this stand-in.
        sys.executable = os.path.abspath(__file__)
        from xcompat.cli import main
        sys.exit(main(argv))
    sys.exit(0)
os.execv({python!r}, [{python!r}, *args])
"""


STAGES = [
    ("plan", {"revoked": ".xcompat/revoked", "trust-ref": "HEAD", "repository": "acme/x", "args": "--backend\ncpu"},
     {"matrix verify", "matrix plan"}),
    ("build", {"cell": "c1", "args": "--backend\nnative"}, {"build"}),
    ("build", {"cell": "c1", "matrix-sha256": "0" * 64}, {"matrix settings", "build"}),
    ("test", {"cell": "c1", "install-wheel": "false", "args": "--isolate\nnone"}, {"test"}),
    ("test", {"cell": "c1", "install-wheel": "false", "matrix-sha256": "0" * 64}, {"matrix settings", "test"}),
    ("abi", {"abi-old": "old.whl", "abi-new": "new"}, {"abi diff"}),
    ("abi", {"abi-old": "old.whl", "abi-new": "new", "matrix-sha256": "0" * 64}, {"matrix settings", "abi diff"}),
    ("coverage", {"matrix-sha256": "0" * 64}, {"matrix settings", "coverage merge"}),
    ("coverage", {"cell": "c1"}, {"run"}),  # the run's own coverage stage, for the cell
    ("probe", {"cell": "c1"}, {"probe"}),
    ("report", {"verification-failed": "the signature does not match"}, {"report"}),
    ("coverage", {}, {"coverage merge"}),
    ("report", {}, {"report"}),
    ("report", {"report-from": "bundle"}, {"report"}),
    ("gate", {"abi-diff": "a.json", "coverage-file": "c.json", "dist": "dist", "tag": "v1.0.0",
              "previous-tag": "v0.9.0", "require-kinds": "build, test", "trust-ref": "origin/main",
              "repository": "acme/x", "revoked": "r"}, {"gate"}),
]


@pytest.mark.skipif(expressions_available() is not None, reason=f"runner unavailable: {expressions_available()}")
@pytest.mark.parametrize(("stage", "inputs", "commands"), STAGES, ids=[f"{s[0]}-{i}" for i, s in enumerate(STAGES)])
def test_action_builds_command_lines_the_cli_accepts(tmp_path: Path, stage: str, inputs: dict[str, str],
                                                     commands: set[str]) -> None:
    shim = tmp_path / "bin" / "python"
    shim.parent.mkdir()
    shim.write_text(SHIM.format(python=sys.executable))
    shim.chmod(0o755)
    workspace = tmp_path / "ws"
    Repo(workspace).commit()  # trust-ref HEAD must resolve
    (workspace / ".xcompat").mkdir(parents=True)
    (workspace / ".xcompat" / "matrix.yml").write_text("xcompat: 1\n")
    (workspace / ".xcompat-out").mkdir()
    (workspace / ".xcompat-out" / "plan.json").write_text("{}")
    (workspace / ".xcompat-out" / "matrix.yml").write_text("xcompat: 1\n")  # the plan artifact's verified bytes
    log = tmp_path / "argv.jsonl"
    log.touch()
    run = run_composite_action(REPO_ROOT, {"stage": stage, "python": str(shim), "install": "false", **inputs},
                         workspace=workspace, env={"XCOMPAT_ARGV_LOG": str(log)})
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    seen = {" ".join(c["argv"][:2]) if c["argv"][0] in ("matrix", "abi", "coverage") else c["argv"][0]
            for c in calls}
    assert commands | {"stage"} <= seen, f"expected {commands}, the action ran {seen}\n{run.log}"
    bad = [c["argv"] for c in calls if not c["ok"]]
    assert bad == [], f"the CLI refuses these command lines: {bad}"
