"""The runtime-libraries check's rules on described libraries: copies of one runtime,
libraries from outside, owners, and snapshot comparison."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from xcompat.contracts.compare import compare_snapshots
from xcompat.contracts.libraries import Library, library_findings, snapshot_self
from xcompat.contracts.owners import OwnerIndex
from xcompat.contracts.runtimes import family_of


def lib(path: str, owner: str = "system", soname: str | None = None, build_id: str | None = None) -> Library:
    return Library(path, soname, build_id, owner, None, family_of(path), None)


@pytest.mark.parametrize(("name", "family"), [
    ("libgomp.so.1", "OpenMP"), ("libgomp-a34b3233.so.1.0.0", "OpenMP"), ("libiomp5.so", "OpenMP"),
    ("libomp.so", "OpenMP"), ("libstdc++.so.6.0.30", "C++ runtime (libstdc++)"), ("libgcc_s.so.1", "libgcc_s"),
    ("libcudart.so.12", "CUDA runtime (libcudart)"), ("libtorch_cpu.so", "libtorch"), ("libc10.so", "libtorch"),
    ("libomptarget.so", None), ("libgompx.so", None), ("libc.so.6", None), ("libstdc++fs.so", None),
])
def test_families(name: str, family: str | None) -> None:
    assert family_of("/x/" + name) == family


def test_two_openmp_runtimes_are_one_finding() -> None:
    found = library_findings([lib("/usr/lib/libgomp.so.1"), lib("/site/intel/libiomp5.so", "distribution")])
    assert [f.code for f in found] == ["duplicate-runtime"]
    assert found[0].fields["family"] == "OpenMP"
    assert "/usr/lib/libgomp.so.1" in found[0].message and "/site/intel/libiomp5.so" in found[0].message


def test_one_torch_is_not_a_duplicate_but_two_libstdcxx_are() -> None:
    torch = [lib(f"/site/torch/lib/{n}", "distribution") for n in ("libtorch_cpu.so", "libc10.so", "libtorch.so")]
    assert library_findings(torch) == []
    two = [lib("/usr/lib/libstdc++.so.6"), lib("/site/pkg.libs/libstdc++-0123abcd.so.6", "distribution")]
    assert [f.fields["family"] for f in library_findings(two)] == ["C++ runtime (libstdc++)"]


def test_outside_library_is_a_finding() -> None:
    found = library_findings([lib("/home/u/build/libfoo.so", "outside", soname="libfoo.so")])
    assert [(f.code, f.fields["path"]) for f in found] == [("library-outside", "/home/u/build/libfoo.so")]


def test_owners(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "pkg").mkdir(parents=True)
    (site / "pkg" / "_x.so").write_bytes(b"")
    (site / "loose.so").write_bytes(b"")
    info = site / "pkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n")
    (info / "RECORD").write_text("pkg/_x.so,,\npkg-1.0.dist-info/RECORD,,\n")
    index = OwnerIndex([str(site)], ["/opt/python"], project="PKG")
    assert index.owner(str(site / "pkg" / "_x.so")).kind == "project"
    assert OwnerIndex([str(site)], [], project="other").owner(str(site / "pkg" / "_x.so")).distribution == "pkg"
    assert index.owner(str(site / "loose.so")).kind == "distribution"
    assert index.owner("/opt/python/lib/libpython3.11.so").kind == "interpreter"
    assert index.owner("/usr/lib/x86_64-linux-gnu/libc.so.6").kind == "system"
    assert index.owner(str(tmp_path / "elsewhere.so")).kind == "outside"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
def test_snapshot_self_is_clean_and_readable() -> None:
    doc = snapshot_self()
    libs = doc["libraries"]
    assert isinstance(libs, list) and libs
    libc = next(x for x in libs if "/libc.so" in x["path"])
    assert libc["soname"] == "libc.so.6" and libc["owner"] == "system" and libc["build_id"]


def test_compare() -> None:
    old = {"libraries": [{"path": "/a/libx.so.1", "soname": "libx.so.1", "build_id": "aa", "owner": "system"},
                         {"path": "/a/liby.so", "soname": None, "build_id": None, "owner": "system"}]}
    new = {"libraries": [{"path": "/b/libx.so.1", "soname": "libx.so.1", "build_id": "bb", "owner": "outside"},
                         {"path": "/a/libz.so", "soname": "libz.so", "owner": "system"}, "junk", {"path": 3}]}
    changes = compare_snapshots(old, new)
    assert [(c["change"], c["library"]) for c in changes] == [
        ("changed", "libx.so.1"), ("removed", "liby.so"), ("added", "libz.so")]
    assert changes[0]["fields"] == ["build_id", "owner"]
    assert compare_snapshots({"libraries": "nope"}, {}) == []


def test_a_static_cxx_runtime_beside_torch_is_a_finding() -> None:
    carried = Library("/site/pkg/_ops.so", None, None, "project", "pkg", None,
                      "_ops.so defines __cxa_throw itself: the C++ runtime is linked in statically")
    found = library_findings([carried, lib("/usr/lib/libstdc++.so.6")])
    assert [(f.code, f.fields["paths"]) for f in found] == [("static-cxx-runtime", "/site/pkg/_ops.so")]
