"""The pytest plugin in real pytest runs: device parametrisation, backend markers, the option,
and no effect on suites that do not use it."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers.testing import xcompat_env

SUITE = """
import pytest


def test_device(device, xcompat_backend):
    assert device == "cpu" and xcompat_backend == "cpu"


@pytest.mark.requires_backend("cuda", "rocm")
def test_needs_gpu():
    pass


@pytest.mark.requires_backend("cpu")
def test_needs_cpu():
    pass


@pytest.mark.requires_backend("cuda")
def test_device_cuda_only(device):
    pass


@pytest.mark.exclude_backend("cpu", reason="no cpu kernel yet")
def test_device_not_cpu(device):
    pass


@pytest.mark.parametrize("device", ["mine"])
def test_own_parametrize(device):
    assert device == "mine"
"""


def _pytest(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:hypothesispytest",
            "-rs",
            "-v",
            *args,
        ],
        cwd=tmp_path,
        env=xcompat_env(env),
        capture_output=True,
        check=False,
        text=True,
        timeout=120,
    )


def _outcomes(stdout: str) -> dict[str, str]:
    return dict(re.findall(r"::(\S+) (PASSED|SKIPPED|FAILED|ERROR)", stdout))


def test_device_parametrisation_and_markers(tmp_path: Path) -> None:
    (tmp_path / "test_dev.py").write_text(SUITE)
    proc = _pytest(tmp_path, "test_dev.py")
    assert proc.returncode == 0, proc.stdout
    assert _outcomes(proc.stdout) == {
        "test_device[cpu]": "PASSED",
        "test_needs_gpu": "SKIPPED",
        "test_needs_cpu": "PASSED",
        "test_device_cuda_only[no-backend]": "SKIPPED",
        "test_device_not_cpu[cpu]": "SKIPPED",
        "test_own_parametrize[mine]": "PASSED",
    }
    assert "no cpu kernel yet" in proc.stdout
    assert "backend cuda not available" in proc.stdout  # the reason from the probe, not a bare skip


def test_selected_but_absent_backends_show_as_skips(tmp_path: Path) -> None:
    (tmp_path / "test_dev.py").write_text(SUITE)
    proc = _pytest(tmp_path, "test_dev.py", "--xcompat-backends", "cpu,cuda", "-k", "test_device")
    outcomes = _outcomes(proc.stdout)
    assert outcomes["test_device[cpu]"] == "PASSED" and outcomes["test_device[cuda]"] == "SKIPPED"
    assert outcomes["test_device_cuda_only[cuda]"] == "SKIPPED"
    # The environment variable selects the same way.
    proc = _pytest(
        tmp_path,
        "test_dev.py",
        "-k",
        "test_device and not only and not not_cpu",
        env={"XCOMPAT_BACKENDS": "all"},
    )
    assert set(_outcomes(proc.stdout)) == {f"test_device[{b}]" for b in ("cpu", "cuda", "rocm", "mps")}


def test_bad_option_and_marker_are_usage_errors(tmp_path: Path) -> None:
    (tmp_path / "test_dev.py").write_text(SUITE)
    proc = _pytest(tmp_path, "test_dev.py", "--xcompat-backends", "gpu")
    assert proc.returncode == 4 and "--xcompat-backends: unknown backend(s) gpu" in proc.stderr
    (tmp_path / "test_bad.py").write_text(
        "import pytest\n\n@pytest.mark.requires_backend('tpu')\ndef test_x(device):\n    pass\n"
    )
    proc = _pytest(tmp_path, "test_bad.py")
    assert (
        proc.returncode != 0
        and "backend markers take names from cpu, cuda, rocm, mps" in proc.stdout + proc.stderr
    )


def test_a_project_device_fixture_wins(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(
        "import pytest\n\n@pytest.fixture\ndef device():\n    return 'their-device'\n"
    )
    (tmp_path / "test_theirs.py").write_text("def test_x(device):\n    assert device == 'their-device'\n")
    proc = _pytest(tmp_path, "test_theirs.py")
    assert proc.returncode == 0 and "test_x PASSED" in proc.stdout  # not parametrised: no [cpu]


def test_plugin_import_is_cheap() -> None:
    code = (
        "import sys, time; t = time.perf_counter(); import xcompat.testing.plugin; "
        "print(time.perf_counter() - t); print(sorted(m for m in ('torch', 'numpy', 'hypothesis', "
        "'xcompat.devices') if m in sys.modules))"
    )
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", code], env=xcompat_env(), capture_output=True, text=True, check=True
    )
    assert proc.stdout.splitlines()[1] == "[]"  # nothing heavy, no probing at import
    assert time.perf_counter() - start < 30


def test_check_leaks_marker_in_a_plain_pytest_run(tmp_path: Path) -> None:
    (tmp_path / "test_leaky.py").write_text(
        "import pytest\n"
        "KEEP = []\n\n"
        "@pytest.mark.check_leaks(repeats=3)\n"
        "def test_keeps_objects():\n"
        "    KEEP.append(b'x' * (1 << 20))\n\n"
        "@pytest.mark.check_leaks('host', repeats=3)\n"
        "def test_clean():\n"
        "    b'x' * (1 << 20)\n\n"
        "@pytest.mark.check_leaks('disk')\n"
        "def test_bad_marker():\n"
        "    pass\n"
    )
    proc = _pytest(tmp_path, "test_leaky.py")
    outcomes = _outcomes(proc.stdout)
    assert outcomes == {"test_keeps_objects": "FAILED", "test_clean": "PASSED", "test_bad_marker": "FAILED"}
    assert "leak: host memory grew by" in proc.stdout and "python" in proc.stdout
    assert "check_leaks: expected kinds from host, device" in proc.stdout
