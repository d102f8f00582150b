"""The ISA floor on real code: the static scan (capstone) and the runtime route (QEMU CPU models).

The fixture isa_ext holds the same wide code twice: isa_unguarded compiled for a CPU above the
baseline (AVX2 on x86_64, SVE on aarch64) and used unconditionally, isa_dispatched compiled
for the baseline with its wide path behind a CPU check. objdump proves the wide instructions
are in both before anything is trusted.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from tests.helpers.emulation import FIXTURES, need_tool

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def x86_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("isa-wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "-w", str(out), str(FIXTURES / "isa_ext")], check=True)
    return next(out.glob("isa_ext-*.whl"))


@pytest.fixture(scope="module")
def x86_site(x86_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("isa-site")
    zipfile.ZipFile(x86_wheel).extractall(site)
    return site


def _holds(objdump: str, library: Path, pattern: str) -> int:
    text = subprocess.run([objdump, "-d", str(library)], capture_output=True, text=True, check=True).stdout
    return sum(pattern in line for line in text.splitlines())


def _xcompat(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "xcompat", *args], capture_output=True, text=True)


def test_scan_names_the_unguarded_function_and_passes_the_dispatched_one(x86_wheel: Path, x86_site: Path,
                                                                         tmp_path: Path) -> None:
    if sys.platform != "linux" or not sys.maxsize > 2**32:
        pytest.skip("needs a 64-bit Linux host")
    objdump = need_tool("objdump", "binutils")
    for name in ("isa_unguarded", "isa_dispatched"):
        library = next(x86_site.glob(f"{name}*.so"))
        assert _holds(objdump, library, "ymm") > 0, f"{name} holds no AVX2 code: the fixture proves nothing"
    out = tmp_path / "isa.json"
    below = _xcompat("abi", "isa", str(x86_wheel), "--floor", "x86-64-v2", "--json", str(out))
    assert below.returncode == 1, below.stderr
    document = json.loads(out.read_text())
    verdicts = {Path(o["path"].split(":", 1)[1]).name.split(".")[0]: o for o in document["objects"]}
    assert verdicts["isa_unguarded"]["verdict"] == "unguarded"
    assert verdicts["isa_dispatched"]["verdict"] == "dispatched"
    assert [f["function"] for f in verdicts["isa_unguarded"]["functions"]] == ["wide_lanes"]
    assert verdicts["isa_unguarded"]["functions"][0]["level"] == "x86-64-v3"
    assert "wide_lanes needs x86-64-v3" in below.stderr + below.stdout
    at_v3 = _xcompat("abi", "isa", str(x86_wheel), "--floor", "x86-64-v3")
    assert at_v3.returncode == 0, at_v3.stderr


@pytest.mark.parametrize("cpu, unguarded_rc", [("Nehalem", -signal.SIGILL), ("Haswell", 0)])
def test_runtime_floor_faults_only_the_unguarded_code(x86_site: Path, cpu: str, unguarded_rc: int) -> None:
    qemu = need_tool("qemu-x86_64-static", "qemu-user-static")
    python = str(Path(sys.executable).resolve())

    def run(module: str) -> subprocess.CompletedProcess[str]:
        code = f"import {module}; print({module}.lanes(2))"
        return subprocess.run([qemu, "-cpu", cpu, python, "-c", code],
                              cwd=x86_site, capture_output=True, text=True,
                              env={"PYTHONPATH": str(x86_site), "PATH": "/usr/bin:/bin"})
    dispatched = run("isa_dispatched")
    assert dispatched.returncode == 0, dispatched.stderr[-500:]
    assert int(dispatched.stdout) == (16 if cpu == "Haswell" else 8)
    unguarded = run("isa_unguarded")
    assert unguarded.returncode == unguarded_rc, unguarded.stderr[-500:]


def test_scan_reads_aarch64_sve_code_without_emulation(tmp_path: Path) -> None:
    gcc = need_tool("aarch64-linux-gnu-gcc", "crossbuild-essential-arm64")
    objdump = need_tool("aarch64-linux-gnu-objdump", "binutils-aarch64-linux-gnu")
    source = tmp_path / "sve.c"
    source.write_text("#include <arm_sve.h>\n__attribute__((noinline)) long lanes(long s) { return svcntw() * s; }\n"
                      "long plain(long s) { return s + 1; }\n")
    library = tmp_path / "libsve.so"
    subprocess.run([gcc, "-O2", "-march=armv8.2-a+sve", "-shared", "-fPIC", "-o", str(library), str(source)],
                   check=True)
    assert _holds(objdump, library, "cntw") == 1
    below = _xcompat("abi", "isa", str(library), "--floor", "armv8.0-a", "--json", str(tmp_path / "a.json"))
    assert below.returncode == 1, below.stderr
    document = json.loads((tmp_path / "a.json").read_text())
    [scan] = document["objects"]
    assert scan["verdict"] == "unguarded" and scan["arch"] == "aarch64"
    assert [(f["function"], f["level"]) for f in scan["functions"]] == [("lanes", "armv8.2-a+sve")]
    assert _xcompat("abi", "isa", str(library), "--floor", "armv8.2-a+sve").returncode == 0
    wrong = _xcompat("abi", "isa", str(library), "--floor", "x86-64-v2")
    assert wrong.returncode == 2 and "unknown ISA level 'x86-64-v2' for aarch64" in wrong.stderr


def test_test_runner_at_the_x86_floor_names_the_crashing_test(x86_site: Path, tmp_path: Path) -> None:
    need_tool("qemu-x86_64-static", "qemu-user-static")
    from xcompat.emulation.lane import host_floor_command

    result = tmp_path / "t.json"
    argv = host_floor_command([sys.executable, "-m", "xcompat", "test", "tests", "--isolate", "test",
                               "--json", str(result)], "x86-64-v2")
    done = subprocess.run(argv, cwd=FIXTURES / "isa_ext", capture_output=True, text=True,
                          env={"PYTHONPATH": str(x86_site), "PYTHONSAFEPATH": "1", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 1, done.stderr[-2000:]
    outcomes = {t["nodeid"]: (t["outcome"], t["message"]) for t in json.loads(result.read_text())["tests"]}
    assert outcomes["tests/test_isa.py::test_dispatched_lanes"][0] == "passed"
    assert outcomes["tests/test_isa.py::test_unguarded_lanes"][0] == "crashed"
    assert "SIGILL" in outcomes["tests/test_isa.py::test_unguarded_lanes"][1]
