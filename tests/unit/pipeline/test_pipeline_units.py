import io
import sys

import pytest

from xcompat.errors import Interrupted
from xcompat.log import Logger
from xcompat.pipeline.frameworks import pick_framework_versions
from xcompat.pipeline.local import LocalPipeline, RunConfig, StageResult
from xcompat.pipeline.progress import StageProgress, format_elapsed, render_bar


def _cell(cid, **fw):
    return {"id": cid, "frameworks": fw, "required": True, "backend": "cpu"}


def test_framework_versions_prefer_the_installed_release():
    cells = [_cell("a", torch="2.5", numpy="2.1"), _cell("b", torch="2.13", numpy="2.1")]
    kept, notes = pick_framework_versions(cells, {"torch": "2.13.0", "numpy": "2.1.3"})
    assert [c["id"] for c in kept] == ["b"]
    assert notes == []


def test_framework_version_mismatch_keeps_newest_and_says_so():
    cells = [_cell("a", numpy="1.26"), _cell("b", numpy="2.1")]
    kept, notes = pick_framework_versions(cells, {"numpy": "2.4.6"})
    assert [c["id"] for c in kept] == ["b"]
    assert "numpy 2.4.6 is installed" in notes[0]


def test_framework_not_installed_leaves_cells_to_ci():
    kept, notes = pick_framework_versions([_cell("a", torch="2.5"), _cell("b")], {})
    assert [c["id"] for c in kept] == ["b"]
    assert "torch is not installed" in notes[0]


def test_progress_bar_and_elapsed_format():
    assert render_bar(0, 4, width=8) == "[........] 0/4"
    assert render_bar(2, 4, width=8) == "[####....] 2/4"
    assert render_bar(9, 4, width=8) == "[########] 9/4"
    assert format_elapsed(125.9) == "02:05"


def test_progress_under_ci_prints_timestamped_lines():
    buf = io.StringIO()
    log = Logger({"CI": "true"}, buf)
    with StageProgress(log, total=2, stream=buf) as progress:
        progress.start("build", "py3.11-linux-x86_64-cpu")
        progress.finish("build", "passed")
    lines = buf.getvalue().splitlines()
    assert lines[0].endswith("stage 1/2: build [py3.11-linux-x86_64-cpu] ...")
    assert lines[0][:2].isdigit() and lines[0][2] == ":"  # HH:MM:SS prefix
    assert "build" in lines[1] and "ok" in lines[1]


def _pipeline(tmp_path):
    cfg = RunConfig(project=tmp_path, matrix=tmp_path / "m.yml", allowed_signers=tmp_path / "a", baseline=None,
                    out=tmp_path / "out")
    return LocalPipeline(cfg, Logger({"CI": "true"}, io.StringIO()))


def test_completed_run_replaces_previous_output_whole(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "stale.txt").write_text("old run")
    pipe = _pipeline(tmp_path)

    def stage():
        return pipe.run_command("echo", [sys.executable, "-c", "print('hello')"])

    results = pipe.execute([("echo", stage)])
    assert results[0].status == "passed" and results[0].exit_code == 0
    out = pipe.publish()
    assert not (out / "stale.txt").exists()
    assert "hello" in (out / "logs" / "echo.log").read_text()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_interrupt_leaves_previous_output_untouched(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "report.md").write_text("previous")
    pipe = _pipeline(tmp_path)

    def boom():
        raise KeyboardInterrupt

    with pytest.raises(Interrupted):
        pipe.execute([("ok", lambda: StageResult(name="ok", status="passed")), ("boom", boom)])
    assert (tmp_path / "out" / "report.md").read_text() == "previous"
    assert not pipe.stage_dir.exists()


def test_stage_exit_codes_map_to_statuses_and_keep_going(tmp_path):
    pipe = _pipeline(tmp_path)
    seq = [
        ("fails", lambda: pipe.run_command("fails", [sys.executable, "-c", "import sys; print('nope'); sys.exit(1)"])),
        ("errors", lambda: pipe.run_command("errors", [sys.executable, "-c", "import sys; sys.exit(4)"])),
        ("hangs", lambda: pipe.run_command("hangs", [sys.executable, "-c", "import time; time.sleep(60)"], timeout=1)),
        ("after", lambda: pipe.run_command("after", [sys.executable, "-c", "pass"])),
    ]
    results = pipe.execute(seq)
    assert [r.status for r in results] == ["failed", "error", "error", "passed"]
    assert results[0].detail == "exit 1: nope"
    assert "timed out" in results[2].detail


LEAVES_TWO = (
    "import subprocess, sys\n"
    "for own_session in (False, True):\n"
    "    p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], start_new_session=own_session)\n"
    "    print('pid', p.pid, flush=True)\n"
)


@pytest.mark.skipif(sys.platform != "linux", reason="ending setsid leftovers needs Linux's child subreaper")
def test_what_a_stage_leaves_running_is_ended_before_the_next_stage(tmp_path):
    # a build script's daemon must not live on into the later stages and rewrite their results
    import os
    from pathlib import Path

    pipe = _pipeline(tmp_path)
    results = pipe.execute([("build", lambda: pipe.run_command("build", [sys.executable, "-c", LEAVES_TWO]))])
    assert results[0].status == "passed"
    log = (pipe.stage_dir / "logs" / "build.log").read_text()
    pids = [int(line.split()[1]) for line in log.splitlines() if line.startswith("pid ")]
    assert len(pids) == 2
    for pid in pids:
        try:
            os.kill(pid, 0)
            alive = "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
        except (ProcessLookupError, FileNotFoundError):
            alive = False
        assert not alive, f"{pid} outlived its stage"
    assert log.count("running after its command ended; xcompat killed it") == 2, log


def test_an_interrupted_stage_command_does_not_run_on(tmp_path, monkeypatch):
    # The stage runs in a session of its own, out of reach of the terminal's Ctrl-C: xcompat
    # must end it itself (it used to be left running when the wait was interrupted).
    import os
    import subprocess

    pipe = _pipeline(tmp_path)
    started: list[subprocess.Popen] = []
    real_wait = subprocess.Popen.wait

    def interrupted_wait(self, timeout=None):
        if not started:
            started.append(self)
            raise KeyboardInterrupt
        return real_wait(self, timeout=timeout)

    monkeypatch.setattr(subprocess.Popen, "wait", interrupted_wait)
    stage = ("slow", lambda: pipe.run_command("slow", [sys.executable, "-c", "import time; time.sleep(60)"]))
    with pytest.raises(Interrupted):
        pipe.execute([stage])
    assert started and started[0].poll() is not None, "the stage command is still running"
    with pytest.raises(ProcessLookupError):
        os.kill(started[0].pid, 0)
