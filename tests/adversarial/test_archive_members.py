"""Hostile members in the archives xcompat unpacks: torch wheels for `abi links`, a built wheel's
abi3 modules. Each is refused with exit 2 and one line naming the archive and the member,
nothing is written outside the destination, and the torch cache never serves one wheel's
libraries for another."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from xcompat import limits
from xcompat.cli import main

pytestmark = pytest.mark.skipif(
    subprocess.run(["sh", "-c", "command -v gcc"], capture_output=True, check=False).returncode != 0,
    reason="gcc is needed to build a real shared library",
)

TORCH_WHEEL = "torch-2.0.0-cp311-cp311-linux_x86_64.whl"
XCOMPAT = Path(sys.executable).parent / "xcompat"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """An extension importing one function from a torch library, and that library."""
    folder = tmp_path_factory.mktemp("elf")
    (folder / "c10.c").write_text("int c10_answer(void) { return 42; }\n")
    (folder / "ext.c").write_text("int c10_answer(void);\nint ext_answer(void) { return c10_answer(); }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(folder / "libc10.so"), str(folder / "c10.c")],
                   check=True, capture_output=True)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(folder / "ext.so"), str(folder / "ext.c"),
                    "-L", str(folder), "-lc10"], check=True, capture_output=True)
    return {"ext": folder / "ext.so", "libc10": folder / "libc10.so"}


def torch_wheel(path: Path, members: dict[str, bytes], *, modes: dict[str, int] | None = None,
                method: int = zipfile.ZIP_DEFLATED) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", method) as zf:
        for name, data in members.items():
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = method
            info.external_attr = (modes or {}).get(name, 0o100644) << 16
            zf.writestr(info, data)
    return path


def links_cli(ext: Path, wheel: Path, cache: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XCOMPAT_CACHE": str(cache)}
    return subprocess.run([str(XCOMPAT), "abi", "links", str(ext), "--torch", str(wheel), *extra],
                          capture_output=True, text=True, env=env, timeout=120, check=False)


def files_under(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if not p.is_dir()}


@pytest.mark.parametrize("member", [
    "torch/lib/../../../../X",  # lands beside the torch-libs folder in the cache
    "torch/lib/" + "../" * 7 + "X",  # lands outside the cache, in the test's folder
])
def test_abi_links_refuses_a_zip_slip_torch_wheel(tmp_path: Path, built: dict[str, Path], member: str) -> None:
    wheel = torch_wheel(tmp_path / "wheels" / TORCH_WHEEL, {
        "torch/version.py": b"__version__ = '2.0.0'\n",
        "torch/lib/libc10.so": built["libc10"].read_bytes(),
        member: b"written outside\n",
    })
    before = files_under(tmp_path)
    proc = links_cli(built["ext"], wheel, tmp_path / "a" / "b" / "cache")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert TORCH_WHEEL in lines[0] and repr(member) in lines[0] and "points outside the wheel" in lines[0]
    assert files_under(tmp_path) == before  # nothing written anywhere, not even the good members
    assert not list(tmp_path.rglob("X"))


@pytest.mark.parametrize(("member", "mode", "message"), [
    ("/ABSOLUTE/X", 0o100644, "points outside the wheel"),
    ("torch/lib/libevil.so", 0o120777, "symbolic link"),
    ("torch\\lib\\..\\..\\X", 0o100644, "backslash"),
])
def test_abi_links_refuses_a_torch_wheel_with_a_bad_member(tmp_path: Path, built: dict[str, Path], capsys,
                                                           monkeypatch, member: str, mode: int, message: str) -> None:
    monkeypatch.setenv("XCOMPAT_CACHE", str(tmp_path / "cache"))
    wheel = torch_wheel(tmp_path / "wheels" / TORCH_WHEEL, {
        "torch/version.py": b"__version__ = '2.0.0'\n",
        "torch/lib/libc10.so": built["libc10"].read_bytes(),
        member: b"/etc/passwd",
    }, modes={member: mode})
    code = main(["abi", "links", str(built["ext"]), "--torch", str(wheel)])
    err = capsys.readouterr().err
    assert code == 2 and message in err and TORCH_WHEEL in err and "Traceback" not in err, err
    assert not (tmp_path / "cache").exists() or files_under(tmp_path / "cache") == set()


def test_abi_links_refuses_a_torch_wheel_with_too_many_members(tmp_path: Path, built: dict[str, Path], capsys,
                                                               monkeypatch) -> None:
    monkeypatch.setenv("XCOMPAT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(limits, "LIMITS", limits.InputLimits(wheel_members=50))
    members = {f"torch/lib/libpad{i}.so": b"" for i in range(60)}
    wheel = torch_wheel(tmp_path / "wheels" / TORCH_WHEEL, {"torch/lib/libc10.so": built["libc10"].read_bytes(),
                                                            **members})
    code = main(["abi", "links", str(built["ext"]), "--torch", str(wheel)])
    err = capsys.readouterr().err
    assert code == 2 and "more than 50 members" in err and TORCH_WHEEL in err, err
    assert not (tmp_path / "cache").exists() or files_under(tmp_path / "cache") == set()


def test_abi_links_refuses_a_zip_bomb_torch_wheel(tmp_path: Path, built: dict[str, Path], capsys,
                                                  monkeypatch) -> None:
    monkeypatch.setenv("XCOMPAT_CACHE", str(tmp_path / "cache"))
    wheel = torch_wheel(tmp_path / "wheels" / TORCH_WHEEL, {"torch/lib/libc10.so": built["libc10"].read_bytes(),
                                                            "torch/lib/libzeros.so": bytes(32 << 20)})
    assert wheel.stat().st_size < 1 << 20  # 32 MiB of zeros packed into tens of KiB
    code = main(["abi", "links", str(built["ext"]), "--torch", str(wheel)])
    err = capsys.readouterr().err
    assert code == 2 and "zip bomb" in err and "libzeros.so" in err, err
    assert not (tmp_path / "cache").exists() or files_under(tmp_path / "cache") == set()


def test_abi_links_refuses_a_torch_member_declared_over_the_limit(tmp_path: Path, built: dict[str, Path], capsys,
                                                                  monkeypatch) -> None:
    monkeypatch.setenv("XCOMPAT_CACHE", str(tmp_path / "cache"))
    lib = built["libc10"].read_bytes()
    monkeypatch.setattr(limits, "LIMITS", limits.InputLimits(wheel_member_bytes=len(lib) - 1))
    wheel = torch_wheel(tmp_path / "wheels" / TORCH_WHEEL, {"torch/lib/libc10.so": lib})
    code = main(["abi", "links", str(built["ext"]), "--torch", str(wheel)])
    err = capsys.readouterr().err
    assert code == 2 and "over the limit" in err and "libc10.so" in err, err


def test_a_crafted_wheel_of_the_same_name_and_size_is_not_served_for_the_real_one(
        tmp_path: Path, built: dict[str, Path]) -> None:
    lib = built["libc10"].read_bytes()
    real = torch_wheel(tmp_path / "real" / TORCH_WHEEL, {"torch/version.py": b"__version__ = '2.0.0'\n",
                                                         "torch/lib/libc10.so": lib}, method=zipfile.ZIP_STORED)
    crafted = torch_wheel(tmp_path / "crafted" / TORCH_WHEEL, {"torch/version.py": b"__version__ = '6.6.6'\n",
                                                               "torch/lib/libc10.so": lib}, method=zipfile.ZIP_STORED)
    assert real.stat().st_size == crafted.stat().st_size and real.read_bytes() != crafted.read_bytes()
    cache = tmp_path / "cache"
    first = links_cli(built["ext"], crafted, cache, "--format", "json")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["torches"][0]["torch_version"] == "6.6.6"
    second = links_cli(built["ext"], real, cache, "--format", "json")
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["torches"][0]["torch_version"] == "2.0.0"


def test_the_build_audit_writes_no_abi3_module_outside_its_folder(tmp_path: Path, built: dict[str, Path],
                                                                  monkeypatch) -> None:
    import tempfile

    from xcompat.builder.audit import abi3_audit
    from xcompat.errors import InputError

    scratch = tmp_path / "a" / "b" / "scratch"
    scratch.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    wheel = torch_wheel(tmp_path / "demo-1.0-cp312-cp312-linux_x86_64.whl", {
        "demo-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
        "demo/../../_evil.abi3.so": built["libc10"].read_bytes(),
    })
    with pytest.raises(InputError) as caught:
        abi3_audit(wheel, env=dict(os.environ))
    assert "points outside the wheel" in str(caught.value) and wheel.name in str(caught.value)
    assert not list(tmp_path.rglob("_evil.abi3.so"))
    assert list(scratch.iterdir()) == []
