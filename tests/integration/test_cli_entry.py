"""The console entry point and a command's start-up, each in a fresh interpreter: what
``--help`` and ``abi diff`` import, the exit without teardown under ``xcompat`` and
``python -m xcompat``, and the exit handlers, threads and wrappers it respects."""

import subprocess
import sys

import pytest


def test_help_does_not_import_command_modules():
    code = (
        "import sys; from xcompat import cli\n"
        "try:\n    cli.main(['--help'])\nexcept SystemExit: pass\n"
        "bad = [m for m in sys.modules if m.startswith('xcompat.commands.') or m in ('torch', 'numpy', 'jsonschema', 'yaml', 'cryptography')]\n"
        "sys.stderr.write('LOADED=' + ','.join(bad))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stderr.strip() == "LOADED="


def test_abi_diff_imports_only_what_it_uses():
    """Start-up is part of every diff's cost (a diff of two small libraries is mostly start-up):
    the command's path keeps clear of modules it does not need. dataclasses (with inspect, ast
    and dis) and shutil (with bz2 and lzma, through argparse's help width) cost about 30 ms."""
    from pathlib import Path

    # a library without debug info (with it on both sides, the abidiff tier runs a subprocess)
    lib = next((str(p) for p in (Path("/lib/x86_64-linux-gnu/libc.so.6"), Path("/lib64/libc.so.6"),
                                 Path("/lib/aarch64-linux-gnu/libc.so.6")) if p.exists()), None)
    if lib is None:
        pytest.skip("no glibc libc.so.6 found on this machine")
    code = (
        "import sys; from xcompat import cli\n"
        f"cli.main(['abi', 'diff', {lib!r}, {lib!r}, '--format', 'json'])\n"
        "bad = [m for m in ('dataclasses', 'inspect', 'shutil', 'tempfile', 'threading', 'torch', 'numpy',"
        " 'jsonschema', 'yaml') if m in sys.modules]\n"
        "sys.stderr.write('LOADED=' + ','.join(bad))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stderr.strip().endswith("LOADED="), proc.stderr


def _console(tmp_path, body: str, *argv: str) -> subprocess.CompletedProcess:
    """Run ``body`` then the console entry point with ``argv`` in a fresh interpreter."""
    code = f"import atexit, sys, threading, time\nfrom xcompat.cli import run\n{body}\nsys.argv = ['xcompat', *{list(argv)!r}]\nrun()\n"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          check=False)


def test_the_console_entry_skips_teardown_but_not_output_handlers_or_exit_codes(tmp_path):
    import json
    from pathlib import Path

    matrix = str(Path(__file__).resolve().parents[2] / "examples" / "sample-ext" / ".xcompat" / "matrix.yml")
    # A whole plan on stdout (buffered, through a pipe), the exit handlers, and exit code 0.
    proc = _console(tmp_path, "atexit.register(lambda: sys.stderr.write('exit handlers ran\\n'))",
                    "matrix", "plan", matrix, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)["cells"]) > 1
    assert "exit handlers ran" in proc.stderr
    # An error keeps its documented exit code and message.
    (tmp_path / "bad.yml").write_text("xcompat: [\n")
    proc = _console(tmp_path, "", "matrix", "validate", "bad.yml")
    assert proc.returncode == 2 and "bad.yml" in proc.stderr, (proc.returncode, proc.stderr)
    # Teardown is skipped: an object finalized only by the interpreter's shutdown is not.
    proc = _console(tmp_path, "class Late:\n    def __del__(self):\n        print('torn down', flush=True)\nkeep = Late()",
                    "matrix", "validate", matrix)
    assert proc.returncode == 0 and "torn down" not in proc.stdout, (proc.returncode, proc.stdout, proc.stderr)


def test_the_console_entry_waits_for_threads_still_running(tmp_path):
    body = "threading.Thread(target=lambda: (time.sleep(0.3), print('thread finished', flush=True))).start()"
    proc = _console(tmp_path, body, "matrix", "validate", "missing.yml")
    assert proc.returncode == 2 and "thread finished" in proc.stdout, (proc.returncode, proc.stdout, proc.stderr)


def test_under_a_wrapper_the_console_entry_returns_instead_of_exiting(tmp_path):
    # coverage run -m xcompat, profilers and debuggers act after the program returns.
    code = ("import sys\nfrom xcompat.cli import run\n"
            "def wrapper():\n    sys.argv = ['xcompat', 'matrix', 'validate', 'missing.yml']\n    return run()\n"
            "print('returned', wrapper(), flush=True)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          check=False)
    assert proc.returncode == 0 and "returned 2" in proc.stdout, (proc.returncode, proc.stdout, proc.stderr)


@pytest.mark.parametrize("entry", ["module", "script"])
def test_python_dash_m_and_the_script_skip_the_teardown(tmp_path, entry):
    # runpy's frames lie under `python -m xcompat` (its file is "<frozen runpy>" on 3.11+);
    # an object finalized only at interpreter teardown shows whether it happened.
    import os
    from pathlib import Path

    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "sitecustomize.py").write_text(
        "import builtins\nclass _Late:\n    def __del__(self):\n        print('torn down', flush=True)\n"
        "builtins._xcompat_teardown_probe = _Late()\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(probe), os.environ.get("PYTHONPATH")]))}
    matrix = str(Path(__file__).resolve().parents[2] / "examples" / "sample-ext" / ".xcompat" / "matrix.yml")
    script = Path(sys.executable).with_name("xcompat")
    if entry == "script" and not script.exists():
        pytest.skip(f"no console script beside {sys.executable}")
    argv = [sys.executable, "-m", "xcompat"] if entry == "module" else [str(script)]
    proc = subprocess.run([*argv, "matrix", "validate", matrix], capture_output=True, text=True, env=env, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert "torn down" not in proc.stdout
    control = subprocess.run([sys.executable, "-c", "pass"], capture_output=True, text=True, env=env, timeout=60,
                             check=False)
    assert "torn down" in control.stdout  # the probe works
