"""The architecture table, root keys, cross-build settings and the chroot command line."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from xcompat.emulation.arches import arch, arches
from xcompat.emulation.binfmt import Emulator
from xcompat.emulation.chroot import Bind, RootRun, command
from xcompat.emulation.cross import _retarget, patched_vars
from xcompat.emulation.lane import Lane
from xcompat.emulation.roots import RootSpec, root_python
from xcompat.errors import InputError


def test_every_arch_names_its_debian_qemu_and_floor_models() -> None:
    table = arches()
    assert set(table) >= {"x86_64", "aarch64", "ppc64le", "s390x"}
    assert table["s390x"].byteorder == "big" and table["aarch64"].byteorder == "little"
    assert arch("arm64") is table["aarch64"] and arch("ppc64el") is table["ppc64le"]
    assert table["aarch64"].cpu_model("armv8.0-a") == "cortex-a57"
    assert table["x86_64"].cpu_model("x86-64-v2") == "Nehalem"
    assert table["aarch64"].cpu_model(None) == "max"


def test_unknown_arch_and_floor_are_input_errors() -> None:
    with pytest.raises(InputError, match="riscv64"):
        arch("riscv64")
    with pytest.raises(InputError, match="armv9"):
        arch("aarch64").cpu_model("armv9")


def test_root_key_depends_on_suite_arch_and_package_set_only() -> None:
    a = RootSpec(arch("aarch64"), packages=("python3", "gcc"))
    assert a.key == RootSpec(arch("aarch64"), packages=("gcc", "python3", "gcc")).key
    assert a.key != RootSpec(arch("s390x"), packages=("python3", "gcc")).key
    assert a.key != RootSpec(arch("aarch64"), suite="trixie", packages=("python3", "gcc")).key
    assert a.key.startswith("aarch64-bookworm-")


def test_root_python_is_read_from_the_files(tmp_path: Path) -> None:
    for name in ("python3.11", "python3.9", "python3"):
        (tmp_path / "usr" / "lib" / name).mkdir(parents=True)
    assert root_python(tmp_path) == "3.11"


def test_compiler_commands_are_retargeted_to_the_cross_compiler() -> None:
    row = arch("aarch64")
    tools = {"gcc": "/usr/bin/aarch64-linux-gnu-gcc", "g++": "/usr/bin/aarch64-linux-gnu-g++"}
    assert _retarget("aarch64-linux-gnu-gcc -shared -Wl,-O1", row, tools) == "/usr/bin/aarch64-linux-gnu-gcc -shared -Wl,-O1"
    assert _retarget("gcc-12 -pthread", row, tools) == "/usr/bin/aarch64-linux-gnu-gcc -pthread"
    assert _retarget("ld -r", row, tools) == "ld -r"


def test_sysconfig_paths_point_into_the_root(tmp_path: Path) -> None:
    source = tmp_path / "_sysconfigdata__linux_aarch64-linux-gnu.py"
    source.write_text("# generated\nbuild_time_vars = {'INCLUDEPY': '/usr/include/python3.11', "
                      "'EXT_SUFFIX': '.cpython-311-aarch64-linux-gnu.so', 'CC': 'aarch64-linux-gnu-gcc', "
                      "'LIBDIR': 'relative'}\n")
    values = patched_vars(source, Path("/r"), arch("aarch64"), {"gcc": "/x/aarch64-linux-gnu-gcc"})
    assert values["INCLUDEPY"] == "/r/usr/include/python3.11"
    assert values["EXT_SUFFIX"] == ".cpython-311-aarch64-linux-gnu.so"
    assert values["CC"] == "/x/aarch64-linux-gnu-gcc"
    assert values["LIBDIR"] == "relative"


def test_sysconfig_file_is_read_as_data_not_run(tmp_path: Path) -> None:
    source = tmp_path / "_sysconfigdata__x.py"
    marker = tmp_path / "ran"
    source.write_text(f"open({str(marker)!r}, 'w').close()\nbuild_time_vars = {{'CC': 'gcc'}}\n")
    assert patched_vars(source, Path("/r"), arch("aarch64"), {})["CC"] == "gcc"
    assert not marker.exists()


def test_chroot_command_quotes_hostile_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIP_INDEX_URL", "https://index.invalid/simple")
    monkeypatch.setenv("AWS_SECRET", "not passed")
    hostile = tmp_path / "a b'; touch /tmp/pwned; '"
    run = RootRun(root=tmp_path / "root", binds=(Bind(hostile, str(hostile)),), cpu="cortex-a57")
    argv = command(run, ["python3", "-c", "print(1)"], cwd=str(hostile))
    assert argv[:5] == ["unshare", "--mount", "--propagation", "private", "--"]
    script = argv[-1]
    lines = script.splitlines()
    bind = next(line for line in lines if line.startswith("mount --bind"))
    assert shlex.split(bind)[2:] == [str(hostile), str(tmp_path / "root") + str(hostile)]
    inner = shlex.split(lines[-1])
    assert inner[:3] == ["exec", "chroot", str(tmp_path / "root")]
    assert "QEMU_CPU=cortex-a57" in inner and "PIP_INDEX_URL=https://index.invalid/simple" in inner
    assert not any(word.startswith("AWS_SECRET") for word in inner)
    assert inner[-3:] == ["python3", "-c", "print(1)"] and str(hostile) in inner


def test_lane_passes_only_stage_settings_into_the_root(tmp_path: Path) -> None:
    lane = Lane(arch=arch("s390x"), root=tmp_path, emulator=Emulator("s390x", "", "", "7.2"), cpu="max",
                floor=None, python="3.11", suite="bookworm")
    argv = lane.wrap(["/host/python", "-m", "xcompat", "test"], cwd=tmp_path / "p", binds=[tmp_path / "o"],
                     env={"PYTHONPATH": "/site", "XCOMPAT_CELL": "c", "HOME": "/root/host", "GITHUB_TOKEN": "t"})
    inner = shlex.split(argv[-1].splitlines()[-1])
    assert "PYTHONPATH=/site" in inner and "XCOMPAT_CELL=c" in inner
    assert not any(w.startswith("GITHUB_TOKEN") for w in inner)
    assert inner[-4:] == ["/opt/xcompat-venv/bin/python", "-m", "xcompat", "test"]
    assert lane.describe() == {"arch": "s390x", "qemu": "7.2", "cpu": "max", "floor": None,
                               "root": "debian bookworm", "python": "3.11"}


def test_roots_use_the_host_mirror_of_the_release_suite_only(tmp_path: Path) -> None:
    from xcompat.emulation.roots import host_mirror

    listed = tmp_path / "sources.list.d"
    listed.mkdir()
    (listed / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.invalid/debian-security\nSuites: bookworm-security\nComponents: main\n\n"
        "Types: deb-src\nURIs: http://src.invalid/debian\nSuites: bookworm\n\n"
        "Types: deb\nURIs: http://mirror.invalid/debian\nSuites: bookworm bookworm-updates\nComponents: main\n")
    assert host_mirror("bookworm", tmp_path) == "http://mirror.invalid/debian"
    assert host_mirror("trixie", tmp_path) == "http://mirror.invalid/debian"  # the same archive
    (listed / "debian.sources").unlink()
    (tmp_path / "sources.list").write_text("# deb http://old.invalid/debian bookworm main\n"
                                           "deb [arch=amd64 signed-by=/k.gpg] http://one.invalid/debian bookworm main\n"
                                           "deb http://one.invalid/security bookworm-security main\n")
    assert host_mirror("bookworm", tmp_path) == "http://one.invalid/debian"
    (tmp_path / "sources.list").write_bytes(b"\xff\xfe garbage deb\n\n\n")
    assert host_mirror("bookworm", tmp_path) is None


def test_each_python_maps_to_the_suite_that_has_it() -> None:
    from xcompat.emulation.roots import suite_for

    assert suite_for("3.11") == "bookworm" and suite_for("3.13") == "trixie"
    assert suite_for("3.12") is None and suite_for("3.13t") is None
