"""Unit tests of the ABI diff logic on synthetic manifests and crafted bytes (no compilers)."""

from __future__ import annotations

import gzip
import json
import struct

import pytest

from xcompat.abi import required_bump_for_versions
from xcompat.abi.binary import LibraryInterface
from xcompat.abi.diff import diff_manifests
from xcompat.abi.fatbin import FatbinError, fatbin_archs
from xcompat.abi.macho import MachOError, is_macho, read_macho_buffer
from xcompat.abi.manifest import Manifest, ManifestError, read_snapshot, write_snapshot
from xcompat.abi.noise import classify, is_stdlib_symbol, unhashed_name
from xcompat.abi.pyapi import compare_signature
from xcompat.abi.render import render_markdown, render_text
from xcompat.abi.rules import PolicyError, default_rules, load_policy_file, make_policy
from xcompat.abi.semver import VersionError
from xcompat.jsonio import validate


def lib(path="libx.so", **kw) -> LibraryInterface:
    kw.setdefault("exports", {})
    return LibraryInterface(path=path, format="elf", arch="x86_64", **kw)


def manifest(libs=None, **kw) -> Manifest:
    return Manifest(source="mem", kind=kw.pop("kind", "wheel"), libraries=libs or {}, **kw)


# -- semver -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("old", "new", "bump"),
    [
        ("1.2.3", "2.0.0", "major"),
        ("1.2.3", "1.3.0", "minor"),
        ("1.2.3", "1.2.4", "patch"),
        ("0.3.1", "0.4.0", "major"),
        ("0.3.1", "0.3.2", "minor"),
        ("0.0.3", "0.0.4", "major"),
        ("1.0.0rc1", "1.0.0", "patch"),
        ("2.0", "1.9", "none"),
        ("1.2.3", "1.2.3", "none"),
        ("1.2", "1.3", "minor"),
    ],
)
def test_bump_between_versions(old, new, bump):
    assert required_bump_for_versions(old, new) == bump


def test_bump_rejects_non_pep440():
    with pytest.raises(VersionError, match="not a PEP 440 version"):
        required_bump_for_versions("1.0", "banana")


# -- rules / policy -----------------------------------------------------------------------------
def test_default_rules_cover_the_contract_kinds():
    needed = {
        "symbol_removed", "symbol_added", "symbol_version_removed", "object_size_changed", "vtable_size_changed",
        "soname_changed", "needed_added", "needed_removed", "glibc_floor_raised", "libstdcxx_floor_raised",
        "macos_target_raised", "wheel_tag_dropped", "abi3_floor_raised", "requires_python_narrowed",
        "requires_dist_narrowed", "numpy_capi_target_changed", "cuda_arch_dropped", "cuda_arch_added",
        "python_api_removed", "python_signature_changed", "python_api_added", "torch_op_removed",
        "torch_op_schema_changed", "torch_op_added",
    }
    assert needed <= set(default_rules())
    assert default_rules()["symbol_removed"] == "major"
    assert default_rules()["symbol_added"] == "minor"


def test_policy_overrides_and_rejects_unknown(tmp_path):
    pol = make_policy({"glibc_floor_raised": "minor"})
    assert pol.bump("glibc_floor_raised") == "minor"
    with pytest.raises(PolicyError, match="perhaps you meant 'glibc_floor_raised'"):
        make_policy({"glibc_floor_raise": "minor"})
    with pytest.raises(PolicyError, match="bump must be one of"):
        make_policy({"symbol_added": "huge"})
    with pytest.raises(PolicyError, match="must be a mapping"):
        make_policy(["symbol_added"])  # type: ignore[arg-type]
    bad = tmp_path / "p.yaml"
    bad.write_text("rules: [unclosed\n")
    with pytest.raises(PolicyError, match=r"p\.yaml:\d+:\d+: invalid YAML"):
        load_policy_file(bad)
    badj = tmp_path / "p.json"
    badj.write_text('{"symbol_added": }')
    with pytest.raises(PolicyError, match=r"p\.json:1:\d+: invalid JSON"):
        load_policy_file(badj)
    good = tmp_path / "good.yaml"
    good.write_text("rules:\n  symbol_added: none\nignore: ['_ZN6detail*']\n")
    pol = load_policy_file(good)
    assert pol.bump("symbol_added") == "none" and pol.ignored(None, "_ZN6detail3fooEv")


# -- noise --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name",
    ["_ZNSt6vectorIiSaIiEE17_M_realloc_insertIJRKiEEEvN9__gnu_cxx17__normal_iteratorIPiS1_EEDpOT_",
     "_ZTVSt23_Sp_counted_ptr_inplace", "_ZNKSt5ctypeIcE8do_widenEc", "_ZN9__gnu_cxx13new_allocator",
     "_ZTINSt7__cxx1115basic_stringbufIcSt11char_traitsIcESaIcEEE", "_ZdlPvm"],
)
def test_stdlib_symbols_are_noise(name):
    assert is_stdlib_symbol(name)


@pytest.mark.parametrize("name", ["_ZN3c1013GeneratorImplD2Ev", "_ZN2at4meta11special_i0eERKNS_6TensorE", "demo_add"])
def test_project_symbols_are_not_noise(name):
    assert not is_stdlib_symbol(name)
    assert classify(name, lib(), extension=False) is None


def test_extension_surface_is_pyinit_and_declared_symbols():
    ext = lib("_ext.so", exports={"PyInit__ext": ("f", 10)})
    assert classify("PyInit__ext", ext, extension=True) is None
    # statically linked C code (libxml2 in lxml) and capsule tables are not the interface...
    assert classify("xmlParseFile", ext, extension=True) == "extension-internal"
    assert classify("_ARRAY_API", ext, extension=True) == "extension-internal"
    # ...unless the project declares them (policy extension_exports)
    assert classify("my_c_api", ext, extension=True, declared=("my_c_*",)) is None
    assert classify("_ZN4impl6helperEi", ext, extension=True) == "extension-internal"
    assert classify("_init", ext, extension=True) == "linker"
    assert classify("V1@V1", ext, extension=False) == "version-node"


@pytest.mark.parametrize(
    ("hashed", "plain"),
    [("libzmq-56587b1b.so.5.2.5", "libzmq.so.5.2.5"), ("libgomp-a34b3233.so.1.0.0", "libgomp.so.1.0.0"),
     ("libscipy_openblas64_-ff651d7f.so", "libscipy_openblas64_.so"), ("libc10.so", "libc10.so"),
     ("libomp-1a2b3c4d.dylib", "libomp.dylib")],
)
def test_unhashed_name(hashed, plain):
    assert unhashed_name(hashed) == plain


# -- diff engine on synthetic manifests -----------------------------------------------------------
def test_symbol_and_size_findings_and_required_bump():
    a = lib(exports={"foo": ("f", 10), "gone": ("f", 5), "tbl": ("o", 16), "_ZTV5Shape": ("o", 40), "_init": ("f", 1)})
    b = lib(exports={"foo": ("f", 99), "new": ("f", 5), "tbl": ("o", 32), "_ZTV5Shape": ("o", 48)})
    d = diff_manifests(manifest({"libx.so": a}), manifest({"libx.so": b}))
    kinds = {(f.kind, f.symbol) for f in d.findings}
    assert kinds == {("symbol_removed", "gone"), ("symbol_added", "new"), ("object_size_changed", "tbl"),
                     ("vtable_size_changed", "_ZTV5Shape")}
    assert d.filtered == {"linker": 1}
    assert d.required_bump == "major" and d.status == "failed"
    vt = next(f for f in d.findings if f.kind == "vtable_size_changed")
    assert vt.demangled == "vtable for Shape" and (vt.old, vt.new) == (40, 48)


def test_actual_bump_gates_only_what_exceeds_it():
    a = lib(exports={"foo": ("f", 1)})
    b = lib(exports={"foo": ("f", 1), "bar": ("f", 1)})
    d = diff_manifests(manifest({"l": a}), manifest({"l": b}), actual_bump="patch")
    assert d.required_bump == "minor" and d.status == "failed"
    d = diff_manifests(manifest({"l": a}), manifest({"l": b}), actual_bump="minor")
    assert d.status == "passed"
    d = diff_manifests(manifest({"l": a}), manifest({"l": b}), fail_on="minor")
    assert d.status == "failed"


def test_policy_override_changes_bump_and_ignore_filters():
    a = lib(version_needs={"libc.so.6": ("GLIBC_2.17",)})
    b = lib(version_needs={"libc.so.6": ("GLIBC_2.17", "GLIBC_2.28")}, imports={"fcntl64": (False, "GLIBC_2.28", "libc.so.6")})
    d = diff_manifests(manifest({"l": a}), manifest({"l": b}))
    f = d.findings[0]
    assert f.kind == "glibc_floor_raised" and "fcntl64" in f.detail and "manylinux_2_28" in f.detail
    assert d.required_bump == "major"
    d = diff_manifests(manifest({"l": a}), manifest({"l": b}), policy={"glibc_floor_raised": "minor"})
    assert d.required_bump == "minor" and d.status == "passed"
    d = diff_manifests(manifest({"l": a}), manifest({"l": b}), policy={"rules": {}, "ignore": ["l"]})
    assert not d.findings and d.filtered == {"policy": 1}


def test_hashed_grafted_libraries_pair_and_soname_noise_is_ignored():
    a = lib(soname="libzmq-56587b1b.so.5", exports={"zmq_send": ("f", 1)})
    b = lib(soname="libzmq-7b073b3d.so.5", exports={"zmq_send": ("f", 1), "zmq_new": ("f", 1)})
    d = diff_manifests(manifest({"pyzmq.libs/libzmq.so.5": a}), manifest({"pyzmq.libs/libzmq.so.5": b}))
    assert not d.findings
    assert d.filtered["grafted-library-symbols"] == 1


def test_moved_library_pairs_by_basename_and_removed_library_reported():
    a = {"pkg/_ext.so": lib(exports={"PyInit__ext": ("f", 1)}), "pkg/libold.so": lib(exports={"x": ("f", 1)})}
    b = {"pkg/sub/_ext.so": lib(exports={"PyInit__ext": ("f", 1)})}
    d = diff_manifests(manifest(a), manifest(b))
    assert [(f.kind, f.library) for f in d.findings] == [("library_removed", "pkg/libold.so")]


def test_cuda_arch_dropped_mentions_ptx_fallback():
    a = lib(cuda_archs=("sm_80", "sm_90", "compute_80"))
    b = lib(cuda_archs=("sm_90", "compute_80", "sm_100"))
    d = diff_manifests(manifest({"l": a}), manifest({"l": b}))
    got = {(f.kind, f.symbol) for f in d.findings}
    assert got == {("cuda_arch_dropped", "sm_80"), ("cuda_arch_added", "sm_100")}
    assert "PTX for compute_80" in next(f.detail for f in d.findings if f.kind == "cuda_arch_dropped")


def test_tags_floor_abi3_and_requires():
    old = manifest(
        tags=("cp39-abi3-manylinux_2_17_x86_64", "cp39-abi3-manylinux2014_x86_64", "cp39-abi3-macosx_11_0_arm64",
              "cp310-cp310-win_amd64"),
        requires_python=">=3.9",
        requires_dist=("torch>=2.1", "numpy>=1.24", "extra-only; extra == 'test'"),
        version="1.0.0",
    )
    new = manifest(
        tags=("cp311-abi3-manylinux_2_28_x86_64", "cp311-abi3-macosx_14_0_arm64"),
        requires_python=">=3.11",
        requires_dist=("torch>=2.4", "numpy>=1.24", "packaging"),
        version="1.1.0",
    )
    d = diff_manifests(old, new)
    kinds = sorted(f.kind for f in d.findings)
    assert kinds == ["abi3_floor_raised", "abi3_floor_raised", "requires_dist_added", "requires_dist_floor_raised",
                     "requires_python_narrowed", "wheel_tag_dropped"]
    narrowed = next(f for f in d.findings if f.kind == "requires_python_narrowed")
    assert "3.9" in narrowed.detail and "3.10" in narrowed.detail
    torch = next(f for f in d.findings if f.kind == "requires_dist_floor_raised")
    assert torch.symbol == "torch" and "2.1" in torch.detail


def test_glibc_and_macos_floor_from_tags():
    old = manifest(tags=("cp311-cp311-manylinux_2_17_x86_64", "cp311-cp311-macosx_11_0_arm64"))
    new = manifest(tags=("cp311-cp311-manylinux_2_28_x86_64", "cp311-cp311-macosx_14_0_arm64"))
    d = diff_manifests(old, new)
    assert sorted(f.kind for f in d.findings) == ["glibc_floor_raised", "macos_target_raised"]


def test_numpy_target_and_macos_target_per_library():
    a = lib(numpy_target="1.25", macos_target="11.0")
    b = lib(numpy_target="2.0", macos_target="13.3")
    d = diff_manifests(manifest({"l": a}), manifest({"l": b}))
    assert sorted(f.kind for f in d.findings) == ["macos_target_raised", "numpy_capi_target_changed"]


# -- Python API signatures -------------------------------------------------------------------------
PK = "positional or keyword"


@pytest.mark.parametrize(
    ("old", "new", "verdict"),
    [
        ([["x", PK, False]], [["x", PK, False]], None),
        ([["x", PK, False]], [["x", PK, False], ["y", PK, True]], "extended"),
        ([["x", PK, False]], [["x", PK, False], ["y", PK, False]], "new required parameter 'y'"),
        ([["x", PK, False], ["y", PK, True]], [["x", PK, False]], "parameter 'y' removed"),
        ([["x", PK, True]], [["x", PK, False]], "parameter 'x' lost its default (now required)"),
        ([["x", PK, False], ["y", PK, False]], [["y", PK, False], ["x", PK, False]], "positional parameters reordered"),
        ([["x", PK, False]], [["x", "keyword-only", False]], "parameter 'x' changed kind"),
        ([["s", "positional-only", False]], [["s", PK, False]], "extended"),  # widened: still callable as before
        ([["text", "positional-only", False]], [["s", PK, False]], "extended"),  # renamed positional-only
    ],
)
def test_compare_signature(old, new, verdict):
    got = compare_signature(old, new)
    assert (got is None and verdict is None) or (got is not None and verdict is not None and got.startswith(verdict))


def test_python_and_torch_op_diff_findings():
    old = manifest(python_api={"demo": {"kind": "module"}, "demo.f": {"kind": "function", "params": [["x", PK, False]]},
                               "demo.C": {"kind": "class"}, "demo.C.m": {"kind": "function", "params": []}},
                   torch_ops={"ns::a": "ns::a(Tensor x) -> Tensor", "ns::b": "ns::b(Tensor x) -> Tensor"})
    new = manifest(python_api={"demo": {"kind": "module"}, "demo.f": {"kind": "function", "params": [["y", PK, False]]},
                               "demo.g": {"kind": "function", "params": []}},
                   torch_ops={"ns::a": "ns::a(Tensor x, int n) -> Tensor", "ns::c": "ns::c() -> ()"})
    d = diff_manifests(old, new)
    got = sorted((f.kind, f.symbol) for f in d.findings)
    assert got == [("python_api_added", "demo.g"), ("python_api_removed", "demo.C"),
                   ("python_signature_changed", "demo.f"), ("torch_op_added", "ns::c"),
                   ("torch_op_removed", "ns::b"), ("torch_op_schema_changed", "ns::a")]


# -- output -----------------------------------------------------------------------------------
def _doc():
    a = lib(exports={f"f{i}": ("f", 1) for i in range(30)} | {"keep": ("f", 1)})
    b = lib(exports={"keep": ("f", 1), "_ZN3foo3barEv": ("f", 1)})
    return diff_manifests(manifest({"libx.so": a}, name="x", version="1.0"),
                          manifest({"libx.so": b}, name="x", version="1.1"), actual_bump="minor",
                          cell_id="py3.11-linux-x86_64-cpu").to_dict()


def test_result_matches_schema_and_contract():
    doc = _doc()
    validate("abi-diff", doc)
    assert doc["version"] == 1 and doc["kind"] == "abi" and doc["status"] == "failed"
    assert doc["required_bump"] == "major" and doc["actual_bump"] == "minor"
    assert doc["findings"][0]["required_bump"] == "major"  # worst first
    added = next(f for f in doc["findings"] if f["kind"] == "symbol_added")
    assert added["demangled"] == "foo::bar()"
    with pytest.raises(Exception, match="does not match schema"):
        validate("abi-diff", {**doc, "required_bump": "huge"})


def test_text_and_markdown_rendering_fold_long_lists():
    doc = _doc()
    text = render_text(doc, limit=5)
    assert "symbol_removed (30, requires major)" in text and "... and 25 more" in text
    md = render_markdown(doc)
    assert "| 🔴 | `symbol_removed` | 30 | major |" in md
    assert "<details>" in md and md.index("symbol_removed") < md.index("symbol_added")
    assert "**🟡 <code>symbol_added</code> (1, requires minor)**" in md


# -- snapshots --------------------------------------------------------------------------------
def test_snapshot_roundtrip_and_malformed(tmp_path):
    m = manifest({"libx.so": lib(exports={"a": ("f", 1), "b@V1": ("o", 8)}, imports={"c": (True, None, None)},
                                 version_needs={"libc.so.6": ("GLIBC_2.17",)}, cuda_archs=("sm_80",))},
                 name="x", version="1.0", tags=("py3-none-any",))
    out = write_snapshot(m, tmp_path / "x.abi.json.gz")
    assert out.read_bytes()[:2] == b"\x1f\x8b"
    back = read_snapshot(out)
    assert back.libraries["libx.so"].exports == m.libraries["libx.so"].exports
    assert back.libraries["libx.so"].imports == m.libraries["libx.so"].imports
    assert not diff_manifests(m, back).findings
    (tmp_path / "trunc.gz").write_bytes(out.read_bytes()[:20])
    with pytest.raises(ManifestError, match="corrupt or truncated gzip"):
        read_snapshot(tmp_path / "trunc.gz")
    (tmp_path / "other.json").write_text(json.dumps({"version": 1, "kind": "build"}))
    with pytest.raises(ManifestError, match="not an xcompat ABI snapshot"):
        read_snapshot(tmp_path / "other.json")
    (tmp_path / "future.gz").write_bytes(gzip.compress(json.dumps({"version": 9, "kind": "abi-snapshot"}).encode()))
    with pytest.raises(ManifestError, match="format version 9 is not supported"):
        read_snapshot(tmp_path / "future.gz")
    (tmp_path / "badlib.json").write_text(json.dumps({"version": 1, "kind": "abi-snapshot", "libraries": {"l": {"exports": 5}}}))
    with pytest.raises(ManifestError, match="malformed ABI snapshot"):
        read_snapshot(tmp_path / "badlib.json")


# -- fatbin -----------------------------------------------------------------------------------
def _fatbin(entries, *, magic=0xBA55ED50):
    body = b""
    for kind, sm, payload in entries:
        hdr = struct.pack("<HHIQ", kind, 0x0101, 64, len(payload)) + b"\0" * 12 + struct.pack("<I", sm)
        body += hdr.ljust(64, b"\0") + payload
    return struct.pack("<IHHQ", magic, 1, 16, len(body)) + body


def test_fatbin_archs_parse_and_concatenation():
    data = _fatbin([(2, 80, b"x" * 24), (2, 90, b"y" * 8)]) + _fatbin([(1, 90, b"ptx")]).ljust(8 * 10, b"\0")
    assert fatbin_archs(data) == ("sm_80", "compute_90", "sm_90")


@pytest.mark.parametrize("cut", [20, 70, 100])
def test_fatbin_truncated_is_an_error(cut):
    data = _fatbin([(2, 80, b"x" * 64)])
    with pytest.raises(FatbinError, match="past the end|truncated"):
        fatbin_archs(data[:cut])


def test_fatbin_without_header_is_an_error():
    with pytest.raises(FatbinError, match="no fat binary header"):
        fatbin_archs(b"\0" * 64)


# -- Mach-O -----------------------------------------------------------------------------------
def _macho(*, minos=(14, 0), symbols=(("_exported_fn", 0x0F, 1), ("_imported", 0x01, 0), ("_private", 0x1F, 1))):
    strtab = b"\0"
    nlist = b""
    for name, ntype, sect in symbols:
        nlist += struct.pack("<IBBHQ", len(strtab), ntype, sect, 0, 0)
        strtab += name.encode() + b"\0"
    cmds = []
    idname = b"@rpath/libdemo.dylib\0".ljust(24, b"\0")
    cmds.append(struct.pack("<IIIIII", 0xD, 24 + len(idname), 24, 0, 0x10000, 0x10000) + idname)
    dep = b"/usr/lib/libSystem.B.dylib\0".ljust(32, b"\0")
    cmds.append(struct.pack("<IIIIII", 0xC, 24 + len(dep), 24, 0, 0, 0) + dep)
    rp = b"@loader_path/../lib\0".ljust(20, b"\0")
    cmds.append(struct.pack("<III", 0x8000001C, 12 + len(rp), 12) + rp)
    cmds.append(struct.pack("<IIIIII", 0x32, 24, 1, (minos[0] << 16) | (minos[1] << 8), 0, 0))
    header_len = 32
    symtab_cmd_len = 24
    cmds_len = sum(len(c) for c in cmds) + symtab_cmd_len
    symoff = header_len + cmds_len
    stroff = symoff + len(nlist)
    cmds.append(struct.pack("<IIIIII", 0x2, 24, symoff, len(symbols), stroff, len(strtab)))
    header = struct.pack("<IiiIIII", 0xFEEDFACF, 0x0100000C, 0, 6, len(cmds), cmds_len, 0) + b"\0" * 4
    return header + b"".join(cmds) + nlist + strtab


def test_macho_reader():
    data = _macho()
    assert is_macho(data[:8])
    (info,) = read_macho_buffer(data, "libdemo.dylib")
    assert info.arch == "arm64" and info.soname == "@rpath/libdemo.dylib"
    assert info.needed == ("/usr/lib/libSystem.B.dylib",) and info.rpath == ("@loader_path/../lib",)
    assert info.macos_target == "14.0"
    assert set(info.exports) == {"exported_fn"} and set(info.imports) == {"imported"}


def test_macho_fat_and_malformed():
    thin = _macho(minos=(11, 0))
    fat = struct.pack(">II", 0xCAFEBABE, 1) + struct.pack(">iiIII", 0x0100000C, 0, 4096, len(thin), 12)
    fat = fat.ljust(4096, b"\0") + thin
    (info,) = read_macho_buffer(fat, "fat.dylib")
    assert info.path == "fat.dylib[arm64]" and info.macos_target == "11.0"
    with pytest.raises(MachOError, match="load commands"):
        read_macho_buffer(thin[:40], "cut.dylib")
    with pytest.raises(MachOError, match="fat slice 0"):
        read_macho_buffer(fat[: 4096 + 10], "cutfat.dylib")
    assert not is_macho(b"\xca\xfe\xba\xbe\x00\x00\x00\x34")  # a Java class file


def test_macho_targets_diff():
    (a,) = read_macho_buffer(_macho(minos=(11, 0)), "a")
    (b,) = read_macho_buffer(_macho(minos=(14, 0), symbols=(("_other", 0x0F, 1),)), "b")
    d = diff_manifests(manifest({"l": a}), manifest({"l": b}))
    assert sorted((f.kind, f.symbol) for f in d.findings) == [
        ("macos_target_raised", None), ("symbol_added", "other"), ("symbol_removed", "exported_fn")]


# -- optional libabigail tier --------------------------------------------------------------------
@pytest.mark.parametrize(("code", "verdict"), [(0, "same"), (4, "changed"), (12, "incompatible"), (1, "error"), (3, "error")])
def test_abidiff_exit_bits(code, verdict):
    from xcompat.abi.abigail import decode_exit

    assert decode_exit(code) == verdict


def test_without_debug_info_the_deep_tier_says_what_was_not_checked(tmp_path):
    from xcompat.abi.abigail import run_abidiff

    found, unchecked = [], []
    run_abidiff(tmp_path / "a.so", tmp_path / "b.so", lambda *a, **k: found.append(a), unchecked,
                old_debug=False, new_debug=True)
    assert not found and "no DWARF debug info" in unchecked[0]


def test_cuobjdump_listing_fallback_parser():
    from xcompat.abi.fatbin import parse_cuobjdump_listing

    text = ("ELF file    1: libk.1.sm_80.cubin\nELF file    2: libk.2.sm_90a.cubin\n"
            "PTX file    1: libk.1.sm_90.ptx\nsomething else\n")
    assert parse_cuobjdump_listing(text) == ("sm_80", "compute_90", "sm_90")
    assert parse_cuobjdump_listing("") == ()


def test_matrix_shaped_policy_bumps_and_gate():
    from types import SimpleNamespace

    from xcompat.abi import policy_from_matrix

    a = lib(exports={"foo": ("f", 1)}, version_needs={"libc.so.6": ("GLIBC_2.17",)})
    b = lib(exports={"bar": ("f", 1)}, version_needs={"libc.so.6": ("GLIBC_2.28",)})
    matrix = SimpleNamespace(abi=SimpleNamespace(baseline="last-release-tag", gating=("glibc_floor_raised",),
                                                 bumps={"symbol_removed": "minor"}))
    policy = policy_from_matrix(matrix)
    assert policy == {"bumps": {"symbol_removed": "minor"}, "gate": ["glibc_floor_raised"]}
    d = diff_manifests(manifest({"l": a}), manifest({"l": b}), policy=policy)
    assert next(f for f in d.findings if f.kind == "symbol_removed").required_bump == "minor"
    assert [f.kind for f in d.gating] == ["glibc_floor_raised"]
    raw = {"abi": {"baseline": "base-branch", "gate": ["symbol_added"], "bumps": {}}}
    d = diff_manifests(manifest({"l": a}), manifest({"l": b}), policy=policy_from_matrix(raw))
    assert [f.kind for f in d.gating] == ["symbol_added"]
    with pytest.raises(PolicyError, match="'gate' names unknown finding kind"):
        make_policy({"gate": ["nope"]})


def test_unresolved_alias_is_compared_by_presence_only():
    old = manifest(python_api={"m": {"kind": "module"}, "m.f": {"kind": "alias"}, "m.g": {"kind": "alias"}})
    new = manifest(python_api={"m": {"kind": "module"}, "m.f": {"kind": "function", "params": []}})
    d = diff_manifests(old, new)
    assert [(f.kind, f.symbol) for f in d.findings] == [("python_api_removed", "m.g")]


def test_macos_wheels_read_through_the_wheel_reader(tmp_path):
    from tests.helpers.abi import make_wheel

    from xcompat.abi import diff_paths

    old = make_wheel(tmp_path / "a", version="1.0.0", tag="cp311-cp311-macosx_11_0_arm64",
                     files={"demo/libdemo.dylib": _macho(minos=(11, 0))})
    new = make_wheel(tmp_path / "b", version="1.0.1", tag="cp311-cp311-macosx_14_0_arm64",
                     files={"demo/libdemo.dylib": _macho(minos=(14, 0), symbols=(("_exported_fn", 0x0F, 1),))})
    doc = diff_paths(old, new, python_api="off", torch_ops="off", against_version=True).to_dict()
    validate("abi-diff", doc)
    got = sorted((f["kind"], f["library"]) for f in doc["findings"])
    assert got == [("macos_target_raised", "(wheel)"), ("macos_target_raised", "demo/libdemo.dylib")]
    assert doc["old"]["exported_symbols"] == 1 and doc["actual_bump"] == "patch" and doc["status"] == "failed"


def test_leaked_absolute_rpath_is_reported_without_gating():
    a = lib(runpath=("$ORIGIN",))
    b = lib(runpath=("$ORIGIN",), rpath=("/__w/_temp/conda_environment_1/lib",))
    d = diff_manifests(manifest({"l": a}), manifest({"l": b}))
    kinds = sorted(f.kind for f in d.findings)
    assert kinds == ["rpath_absolute_added", "rpath_changed"]
    assert d.status == "passed" and d.required_bump == "none"


def test_schema_lists_exactly_the_rule_kinds():
    from xcompat.jsonio import load_schema

    enum = load_schema("abi-diff")["properties"]["findings"]["items"]["properties"]["kind"]["enum"]
    assert sorted(enum) == sorted(default_rules())


@pytest.mark.parametrize("bad", [{"bumps": ["symbol_added"]}, {"rules": "major"}, {"ignore": "x*"}, {"gate": "symbol_added"},
                                 {"rules": {}, "extra": 1}])
def test_malformed_structured_policies_are_refused(bad):
    with pytest.raises(PolicyError):
        make_policy(bad)


@pytest.mark.parametrize(
    ("name", "noise_reason"),
    [("_ZTV5Shape", None), ("_ZTIN3c1013GeneratorImplE", None),
     ("_ZTIFN2at6TensorERKS0_S2_dE", "vague-linkage"),  # typeinfo of a function type
     ("_ZTVN3c104impl6detail31WrapFunctionIntoRuntimeFunctor_IPFvvEvNS_4guts8typelist8typelistIJEEEEE", "vague-linkage"),
     ("_ZN3c104impl13some_inline_fnEv", "vague-linkage")],
)
def test_weak_symbols_vague_linkage_rules(name, noise_reason):
    assert classify(name, lib(), extension=False, weak=True) == noise_reason
