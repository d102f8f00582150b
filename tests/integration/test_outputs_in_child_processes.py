"""The output policy (xcompat.outputs) where it needs a process of its own: a file-size
limit standing in for a full disk, a real SIGINT in the middle of a write, another user's
permissions, and the CLI's own interrupt path."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SAMPLE_MATRIX = REPO / "examples" / "sample-ext" / ".xcompat" / "matrix.yml"


def _run_child(code: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, capture_output=True,
                          text=True, timeout=60, check=False)


def test_a_full_disk_leaves_the_old_file_and_no_temporary(tmp_path):
    """RLIMIT_FSIZE stands in for a full disk: the write fails with EFBIG part-way."""
    path = tmp_path / "result.json"
    path.write_text("previous")
    proc = _run_child(
        f"""
        import resource, signal, sys
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        from xcompat.outputs import OutputError, write_bytes
        try:
            write_bytes({str(path)!r}, b"x" * 100_000)
        except OutputError as exc:
            print("ERR", exc)
            sys.exit(2)
        """,
        tmp_path,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout.startswith("ERR") and "previous file, if any, is unchanged" in proc.stdout
    assert path.read_text() == "previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.json"]


def test_an_interrupted_write_leaves_the_old_file_and_no_temporary(tmp_path):
    """A real SIGINT arrives while the temporary file is being synced."""
    path = tmp_path / "result.json"
    path.write_text("previous")
    proc = _run_child(
        f"""
        import os, signal
        real_fsync = os.fsync
        def fsync_then_interrupt(fd):
            real_fsync(fd)
            os.kill(os.getpid(), signal.SIGINT)
        os.fsync = fsync_then_interrupt
        from xcompat.outputs import write_bytes
        try:
            write_bytes({str(path)!r}, b"new" * 1000)
        except KeyboardInterrupt:
            raise SystemExit(130)
        """,
        tmp_path,
    )
    assert proc.returncode == 130, proc.stderr
    assert path.read_text() == "previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.json"]


def test_a_read_only_folder_is_a_clear_error(tmp_path):
    # Under a folder an unprivileged user can reach (pytest's own tmp root is 0700).
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="xcompat-ro-", dir="/tmp"))
    os.chmod(base, 0o755)
    ro = base / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    # root writes through permission bits, so the write runs as an unprivileged user there.
    drop = "os.setgid(65534); os.setuid(65534)" if os.geteuid() == 0 else ""
    proc = _run_child(
        f"""
        import os
        from xcompat.outputs import OutputError, write_bytes
        {drop}
        try:
            write_bytes({str(ro / 'out.json')!r}, b"x")
        except OutputError as exc:
            print("ERR", exc)
        """,
        tmp_path,
    )
    try:
        assert proc.stdout.startswith("ERR") and "cannot write (Permission denied)" in proc.stdout, proc.stderr
        assert list(ro.iterdir()) == []
    finally:
        import shutil

        ro.chmod(0o755)
        shutil.rmtree(base)


def test_sigint_during_a_command_leaves_its_previous_output(tmp_path):
    """The CLI's own interrupt path: exit 130 and the previous file untouched."""
    out = tmp_path / "plan.json"
    out.write_text("previous")
    code = textwrap.dedent(
        f"""
        import os, signal, sys
        real_fsync = os.fsync
        def fsync_then_interrupt(fd):
            real_fsync(fd)
            os.kill(os.getpid(), signal.SIGINT)
        os.fsync = fsync_then_interrupt
        from xcompat import cli
        sys.exit(cli.main(["matrix", "plan", {str(SAMPLE_MATRIX)!r}, "-o", {str(out)!r}]))
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 130, proc.stderr
    assert "Traceback" not in proc.stderr
    assert out.read_text() == "previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json"]
