"""torch for a lane's kernels: which arches have a torch wheel, the cached wheel found without
a download, and an install counted only when it is complete (no QEMU is started here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from xcompat.emulation.arches import arch
from xcompat.emulation.binfmt import Emulator
from xcompat.emulation.lane import VENV, Lane
from xcompat.emulation.run_lane import RunLane
from xcompat.emulation.torch_lane import STAMP, has_torch, site_packages, torch_version, torch_wheel


def _lane(tmp_path: Path, name: str) -> RunLane:
    row = arch(name)
    lane = Lane(arch=row, root=tmp_path / "root", emulator=Emulator(name, "/x", "/q", "7.2.22"), cpu=row.rich,
                floor=None, python="3.11", suite="bookworm")
    return RunLane(lane=lane, package=tmp_path / "pkg")


def test_only_arches_pypi_has_a_cpu_torch_for_install_one() -> None:
    assert torch_version(arch("aarch64")) == "2.6.0"
    assert torch_version(arch("s390x")) is None and torch_version(arch("ppc64le")) is None


def test_a_lane_without_a_torch_wheel_says_why_and_installs_nothing(tmp_path: Path) -> None:
    lane = _lane(tmp_path, "s390x")
    assert lane.torch is None and not lane.has_torch
    assert "no torch wheel for s390x" in (lane.ensure_torch() or "")
    assert not (tmp_path / "root").exists()


def test_the_cached_wheel_is_used_without_a_download(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XCOMPAT_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "cache" / "emulation" / "wheels" / "aarch64-cp311"
    folder.mkdir(parents=True)
    cached = folder / "torch-2.6.0-cp311-cp311-manylinux_2_28_aarch64.whl"
    cached.write_bytes(b"")
    (folder / "torch-2.6.0-cp311-cp311-manylinux_2_28_x86_64.whl").write_bytes(b"")  # not the lane's arch
    assert torch_wheel(arch("aarch64"), "3.11", "2.6.0") == cached


def test_torch_counts_only_with_the_stamp_of_a_complete_install(tmp_path: Path) -> None:
    site = site_packages(tmp_path, VENV, "3.11")
    (site / "torch").mkdir(parents=True)
    assert not has_torch(site)  # a folder a broken install left
    (site / STAMP).write_text("torch==2.6.0 ninja numpy\n", encoding="utf-8")
    assert has_torch(site) and has_torch(site, "torch==2.6.0 ninja numpy")
    assert not has_torch(site, "torch==2.7.0 ninja numpy")  # another release: installed again
