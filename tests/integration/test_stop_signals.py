"""SIGTERM and SIGHUP end a command the way Ctrl-C does: its exit code (143, 129), one line
naming the command and the signal, no traceback, nothing half-written; and a second signal
while that cleanup runs is dropped, not raised in the middle of it.

Each command runs in a child process that sends the signals to itself at a fixed point of an
atomic write (``xcompat.outputs``): after the temporary file is synced, and, for the second
signal, as the temporary file is being removed."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLE_MATRIX = REPO / "examples" / "sample-ext" / ".xcompat" / "matrix.yml"
CODES = {"SIGTERM": 143, "SIGHUP": 129}

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="POSIX signals")


def _plan_with(out: Path, cwd: Path, *, synced: str, removing: str = "") -> subprocess.CompletedProcess[str]:
    """``xcompat matrix plan -o OUT`` through ``cli.main``; the signals named in ``synced`` are
    sent once the temporary file is synced, those in ``removing`` when it is being removed."""
    code = textwrap.dedent(
        f"""
        import os, signal, sys
        real_fsync, real_unlink = os.fsync, os.unlink
        def fsync_then_signal(fd):
            real_fsync(fd)
            for name in {synced.split()!r}:
                os.kill(os.getpid(), getattr(signal, name))
        def signal_then_unlink(path, *args, **kwargs):
            for name in {removing.split()!r}:
                os.kill(os.getpid(), getattr(signal, name))
            return real_unlink(path, *args, **kwargs)
        os.fsync, os.unlink = fsync_then_signal, signal_then_unlink
        from xcompat import cli
        sys.exit(cli.main(["matrix", "plan", {str(SAMPLE_MATRIX)!r}, "-o", {str(out)!r}]))
        """
    )
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120,
                          check=False)


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_a_signal_ends_a_command_with_its_own_exit_code_and_line(tmp_path: Path, name: str) -> None:
    out = tmp_path / "plan.json"
    out.write_text("previous")
    proc = _plan_with(out, tmp_path, synced=name)
    assert proc.returncode == CODES[name], proc.stderr
    assert f"xcompat matrix plan: interrupted by {name}" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert out.read_text() == "previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json"]


@pytest.mark.parametrize("second", ["SIGINT", "SIGTERM SIGHUP"])
def test_a_second_signal_during_the_cleanup_is_dropped(tmp_path: Path, second: str) -> None:
    out = tmp_path / "plan.json"
    out.write_text("previous")
    proc = _plan_with(out, tmp_path, synced="SIGTERM", removing=second)
    assert proc.returncode == 143, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("interrupted by") == 1, proc.stderr
    # the cleanup the first signal started ran to its end: no temporary file is left
    assert out.read_text() == "previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json"]
