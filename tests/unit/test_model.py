import platform
import sys

import pytest

from xcompat.model import Cell, cell_id, runner_arch, runner_platform


@pytest.mark.parametrize(
    ("sys_platform", "machine", "expected"),
    [
        ("linux", "x86_64", ("linux", "x86_64")),
        ("linux", "arm64", ("linux", "aarch64")),
        ("darwin", "arm64", ("macos", "arm64")),
        ("darwin", "x86_64", ("macos", "x86_64")),
        ("win32", "AMD64", ("windows", "AMD64")),
        ("win32", "ARM64", ("windows", "ARM64")),
    ],
)
def test_runner_platform_and_arch_use_the_matrix_words(monkeypatch, sys_platform, machine, expected):
    monkeypatch.setattr(sys, "platform", sys_platform)
    monkeypatch.setattr(platform, "machine", lambda: machine)
    assert (runner_platform(), runner_arch()) == expected


def test_cell_round_trips_through_its_dict():
    cell = Cell(id=cell_id("3.13t", "linux", "x86_64", "cuda", "12.8", (("torch", "2.5"),)), python="3.13t",
                platform="linux", arch="x86_64", backend="cuda", toolkit="12.8", gpu_archs=("sm_80",),
                frameworks=(("torch", "2.5"),), runs_on=("self-hosted", "gpu"))
    assert cell.id == "py3.13t-linux-x86_64-cuda12.8-torch2.5"
    assert cell.free_threaded and cell.framework("torch") == "2.5"
    assert Cell.from_dict(cell.to_dict()) == cell
