"""`xcompat run` under CI on a matrix edited after signing: exit 3, every stage skipped, and a
report whose first problem is the signature, in full, with the real fix."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def test_a_tampered_matrix_under_ci_exits_3_and_says_why_in_full(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    shutil.copytree(REPO / "examples" / "sample-ext", project)
    matrix = project / ".xcompat" / "matrix.yml"
    matrix.write_text(matrix.read_text() + "# edited after signing\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GITLAB", "XCOMPAT_"))}
    proc = subprocess.run([sys.executable, "-m", "xcompat", "run", str(project), "--baseline",
                           str(REPO / "examples" / "sample-ext"), "--no-coverage"],
                          capture_output=True, text=True, env={**env, "CI": "true"}, cwd=tmp_path,
                          timeout=300, check=False)
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    out = tmp_path / ".xcompat-out"
    run = json.loads((out / "run.json").read_text())
    ran = [s["name"] for s in run["stages"] if s["status"] not in ("skipped",) and s["name"] not in ("verify", "report")]
    assert ran == [], f"stages ran on an unverified matrix: {ran}"
    report = json.loads((out / "report.json").read_text())
    first = next((p for p in report["problems"] if "verify: exit 3" in p), report["problems"])
    assert isinstance(first, str), first
    # The message is whole, up to the hint at its end, not cut mid-word.
    assert "(re-sign after reviewing the change: xcompat matrix sign)" in first
    markdown = (out / "report.md").read_text()
    assert markdown.split("\n1. ", 1)[1].startswith("❌ **verify failed**"), markdown[:500]
    assert "re-sign it with `xcompat matrix sign`" in markdown
    assert "run the pipeline stage of that cell again" not in markdown
