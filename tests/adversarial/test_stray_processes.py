"""A test that leaves a process behind (in its own session, setsid, or not) must not pass
silently: the process is ended before `xcompat test` writes its result (it could otherwise
outlive xcompat and rewrite that result), and the result says it was left running: on the
test's record where each test has its own process, on the run with ``--isolate none``."""

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
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"],
                         start_new_session=os.environ["XCOMPAT_STRAY_SETSID"] == "1")
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
@pytest.mark.parametrize("setsid", [True, False], ids=["setsid", "same-session"])
@pytest.mark.parametrize("isolation", ["test", "file", "none"])
def test_a_process_a_test_leaves_running_is_ended_and_noted(tmp_path: Path, isolation: str, setsid: bool) -> None:
    project = tmp_path / "proj"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_bg.py").write_text(TEST)
    pidfile = tmp_path / "pid"
    env = {**os.environ, "XCOMPAT_STRAY_PIDFILE": str(pidfile), "XCOMPAT_STRAY_SETSID": "1" if setsid else "0"}
    proc = subprocess.run([sys.executable, "-m", "xcompat", "test", str(project), "--isolate", isolation,
                           "--json", str(tmp_path / "out.json")],
                          capture_output=True, text=True, timeout=120, env=env, check=False)
    pid = int(pidfile.read_text())
    try:
        doc = json.loads((tmp_path / "out.json").read_text())
        record = doc["tests"][0]
        assert not _alive(pid), f"pid {pid} outlived `xcompat test --isolate {isolation}`\n{proc.stderr}"
        where = doc["findings"] if isolation == "none" else record["findings"]
        assert [f["category"] for f in where] == ["stray-process"], (doc["findings"], record)
        assert f"left process {pid} " in where[0]["summary"]
    finally:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
