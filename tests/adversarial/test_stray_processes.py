"""A test that leaves a process behind in a session of its own (setsid) must not pass silently:
the process is ended with its test, or the test's record says it was left running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

TEST = '''
import os, subprocess, sys

def test_leaves_a_daemon():
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    with open(os.environ["XCOMPAT_STRAY_PIDFILE"], "w") as fh:
        fh.write(str(p.pid))
'''


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "State:\tZ" in status.read_text())


@pytest.mark.skipif(sys.platform != "linux", reason="setsid and /proc semantics checked on Linux")
def test_a_setsid_grandchild_is_ended_or_noted(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_bg.py").write_text(TEST)
    pidfile = tmp_path / "pid"
    env = {**os.environ, "XCOMPAT_STRAY_PIDFILE": str(pidfile)}
    proc = subprocess.run([sys.executable, "-m", "xcompat", "test", str(project), "--json", str(tmp_path / "out.json")],
                          capture_output=True, text=True, timeout=120, env=env, check=False)
    pid = int(pidfile.read_text())
    try:
        record = json.loads((tmp_path / "out.json").read_text())["tests"][0]
        noted = any("process" in json.dumps(item).lower() for item in (record.get("message"), record.get("findings")))
        assert not _alive(pid) or noted, f"pid {pid} outlived `xcompat test` and its test {record['outcome']} silently\n{proc.stdout}"
    finally:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
