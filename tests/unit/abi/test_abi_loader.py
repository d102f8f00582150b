"""Loader semantics, library pairing, floors against the tag and the smaller rules of the
library diff, on synthetic interfaces (the loader itself is the oracle in
tests/integration/abi/test_loader_oracle.py)."""

from __future__ import annotations

import pytest

from xcompat.abi.binary import LibraryInterface
from xcompat.abi.binding import Reference, bind, compare_bindings, definitions
from xcompat.abi.diff import diff_manifests
from xcompat.abi.manifest import Manifest
from xcompat.abi.noise import default_extension_exports, vague_linkage_shape
from xcompat.abi.pairing import pair_libraries
from xcompat.abi.tags_diff import promised_floors


def lib(path="libx.so", **kw) -> LibraryInterface:
    kw.setdefault("exports", {})
    return LibraryInterface(path=path, format="elf", arch="x86_64", **kw)


def manifest(libs, **kw) -> Manifest:
    return Manifest(source="mem", kind=kw.pop("kind", "wheel"), libraries=libs, **kw)


def found(d) -> set[tuple[str, str | None]]:
    return {(f.kind, f.symbol) for f in d.findings}


# -- loader rules ------------------------------------------------------------------------------
def test_unversioned_reference_binds_to_default_version_not_to_hidden():
    defs = definitions(lib(exports={"f@V2": ("f", 0), "f@V1": ("f", 0)}, hidden_versions=frozenset({"f@V1"})))["f"]
    assert bind(Reference("f", None), defs, versioned=True).key == "f@V2"
    assert bind(Reference("f", "V1"), defs, versioned=True).key == "f@V1"
    only_hidden = definitions(lib(exports={"f@V1": ("f", 0)}, hidden_versions=frozenset({"f@V1"})))["f"]
    assert bind(Reference("f", None), only_hidden, versioned=True) is None


def test_versioned_reference_binds_to_unversioned_library_but_not_to_another_version():
    plain = definitions(lib(exports={"f": ("f", 0)}))["f"]
    assert bind(Reference("f", "V1"), plain, versioned=False).key == "f"
    moved = definitions(lib(exports={"f@V2": ("f", 0)}, version_defs=("V2",)))["f"]
    assert bind(Reference("f", "V1"), moved, versioned=True) is None


def test_version_script_added_removes_nothing_and_growth_is_seen_by_base_name():
    a = lib(exports={"f": ("f", 0), "tls": ("t", 8)})
    b = lib(exports={"f@V1": ("f", 0), "tls@V1": ("t", 16), "V1@V1": ("a", 0)}, version_defs=("V1",))
    changes = compare_bindings(a, b)
    assert [(c.kind, c.ref.key, c.old.size, c.new.size) for c in changes] == [("size_changed", "tls", 8, 16)]
    d = diff_manifests(manifest({"l": a}), manifest({"l": b}))
    assert found(d) == {("object_size_changed", "tls"), ("symbol_versioning_added", None)}
    assert d.required_bump == "major"


def test_added_version_node_and_new_versioned_symbol_get_findings():
    a = lib(exports={"f@V1": ("f", 0)}, version_defs=("V1",))
    b = lib(exports={"f@V1": ("f", 0), "g@V2": ("f", 0)}, version_defs=("V1", "V2"))
    d = diff_manifests(manifest({"l": a}), manifest({"l": b}))
    assert found(d) == {("symbol_added", "g@V2"), ("symbol_version_added", None)}
    assert d.required_bump == "minor"


def test_compat_alias_dropped_is_a_version_removal_and_node_removal_breaks():
    a = lib(exports={"f@V1": ("f", 0), "f@V2": ("f", 0)}, hidden_versions=frozenset({"f@V1"}), version_defs=("V1", "V2"))
    b = lib(exports={"f@V2": ("f", 0)}, version_defs=("V2",))
    d = diff_manifests(manifest({"l": a}), manifest({"l": b}))
    assert found(d) == {("symbol_version_removed", "f@V1"), ("symbol_version_removed", None)}


def test_gnu_unique_object_size_change_is_not_filtered():
    a = lib(exports={"_ZZN2ns7counterEvE1c": ("u", 4)})
    b = lib(exports={"_ZZN2ns7counterEvE1c": ("u", 8)})
    d = diff_manifests(manifest({"l": a}), manifest({"l": b}))
    assert found(d) == {("object_size_changed", "_ZZN2ns7counterEvE1c")}


def test_ignore_pattern_matches_versioned_names_by_base():
    a = lib(exports={"internal_f@V1": ("f", 0), "api@V1": ("f", 0)}, version_defs=("V1",))
    b = lib(exports={"api@V1": ("f", 0)}, version_defs=("V1",))
    d = diff_manifests(manifest({"l": a}), manifest({"l": b}), policy={"rules": {}, "ignore": ["internal_*"]})
    assert not d.findings and d.filtered == {"policy": 1}
    d = diff_manifests(manifest({"l": a}), manifest({"l": b}), policy={"rules": {}, "ignore": ["internal_f@V1"]})
    assert not d.findings


# -- weak C++ heuristic ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "vague"),
    [("_ZN2ns5twiceIiEET_S1_", True),  # ns::twice<int>(int): template instantiation
     ("_ZZN2ns1fEvENKUlvE_clEv", True),  # a lambda's operator()
     ("_ZGVZN2ns1fEvE1x", True),  # guard variable
     ("_ZN2ns13explicit_weakEv", False),  # ns::explicit_weak(): may be __attribute__((weak))
     ("_ZN2ns1fESt6vectorIiSaIiEE", False),  # template arguments only in the parameters
     ("_ZTV5Shape", False), ("_ZTV3BoxIiE", True)],
)
def test_weak_cxx_shape(name, vague):
    assert vague_linkage_shape(name) is vague


# -- pairing ------------------------------------------------------------------------------------
def test_pairing_explicit_soname_stem_and_hash():
    one = {"libfoo.so.1.0.0": lib(soname="libfoo.so.1")}
    two = {"libfoo.so.1.0.1": lib(soname="libfoo.so.1")}
    pairs, ao, bo = pair_libraries(one, two, explicit=True)
    assert [(p.old_key, p.new_key, p.how) for p in pairs] == [("libfoo.so.1.0.0", "libfoo.so.1.0.1", "explicit")]
    old = {"pa/libarrow.so.2400": lib(soname="libarrow.so.2400"), "pa/libx.so.3": lib(soname="libx.so"),
           "z.libs/libzmq.so.5": lib(path="w!z.libs/libzmq-56587b1b.so.5")}
    new = {"pa/libarrow.so.2500": lib(soname="libarrow.so.2500"), "pa/libx-new.so.4": lib(soname="libx.so"),
           "z.libs/libzmq.so.5": lib(path="w!z.libs/libzmq-7b073b3d.so.5")}
    pairs, ao, bo = pair_libraries(old, new)
    assert {(p.old_key, p.how) for p in pairs} == {("pa/libarrow.so.2400", "stem"), ("pa/libx.so.3", "soname"),
                                                   ("z.libs/libzmq.so.5", "auditwheel-hash")}
    assert not ao and not bo


def test_differently_named_single_libraries_are_compared_and_not_called_wheel_members():
    a = manifest({"libfoo.so.1.0.0": lib(exports={"f": ("f", 0), "g": ("f", 0)})}, kind="library")
    b = manifest({"libfoo.so.1.0.1": lib(exports={"f": ("f", 0)})}, kind="library")
    d = diff_manifests(a, b)
    assert found(d) == {("symbol_removed", "g")}
    assert d.to_dict()["pairs"] == [{"old": "libfoo.so.1.0.0", "new": "libfoo.so.1.0.1", "how": "explicit"}]


def test_bundled_library_version_change_is_not_needed_noise():
    ext_a = lib(needed=("libsodium-1a2b3c4d.so.23", "libc.so.6"), exports={"PyInit_x": ("f", 0)})
    ext_b = lib(needed=("libsodium-5e6f7a8b.so.26", "libc.so.6"), exports={"PyInit_x": ("f", 0)})
    a = manifest({"p/x.so": ext_a, "p.libs/libsodium.so.23": lib()})
    b = manifest({"p/x.so": ext_b, "p.libs/libsodium.so.26": lib()})
    d = diff_manifests(a, b)
    assert not [f for f in d.findings if f.kind.startswith("needed_")]
    assert d.filtered["needed-bundled-version"] == 1


# -- floors against the tag -------------------------------------------------------------------
def test_promised_floors_from_the_lowest_manylinux_tag():
    got, by = promised_floors(("cp311-cp311-manylinux_2_28_x86_64", "cp311-cp311-manylinux_2_27_x86_64"))
    assert by == "manylinux_2_27_x86_64" and got["GLIBC_"] == "GLIBC_2.27" and got["CXXABI_"] == "CXXABI_1.3.11"
    assert promised_floors(("cp311-cp311-linux_x86_64",)) == ({}, None)


def test_floor_rise_within_the_tag_does_not_gate_beyond_it_does():
    a = lib(version_needs={"libstdc++.so.6": ("CXXABI_1.3.8",)})
    b = lib(version_needs={"libstdc++.so.6": ("CXXABI_1.3.9",)}, imports={"x": (False, "CXXABI_1.3.9", "libstdc++.so.6")})
    tags = ("cp37-abi3-manylinux_2_28_x86_64",)
    d = diff_manifests(manifest({"l": a}, tags=tags), manifest({"l": b}, tags=tags))
    assert found(d) == {("floor_raised_within_tag", None)} and d.status == "passed"
    c = lib(version_needs={"libstdc++.so.6": ("CXXABI_1.3.13",)})
    d = diff_manifests(manifest({"l": a}, tags=tags), manifest({"l": c}, tags=tags))
    assert found(d) == {("cxxabi_floor_raised", None)} and "promises only CXXABI_1.3.11" in d.findings[0].detail


def test_default_extension_exports_is_named_after_the_package():
    assert default_extension_exports("sample_ext/_core.cpython-311-x86_64-linux-gnu.so") == ("sample_*",)
    assert default_extension_exports("x86_64/lxml/etree.cpython-311-x86_64-linux-gnu.so") == ("lxml_*",)
    assert default_extension_exports("_cffi_backend.cpython-311-x86_64-linux-gnu.so") == ("cffi_*",)
    ext_a = lib(exports={"PyInit_etree": ("f", 0), "xmlParseFile": ("f", 0)})
    ext_b = lib(exports={"PyInit_etree": ("f", 0)})
    d = diff_manifests(manifest({"lxml/etree.so": ext_a}), manifest({"lxml/etree.so": ext_b}))
    assert not d.findings and d.filtered == {"extension-internal": 1}


def test_weak_member_of_an_exported_class_is_an_inline_member():
    from xcompat.abi.noise import class_lookup

    exports = {"_ZTV5Shape": ("O", 40), "_ZN5Shape4areaEv": ("F", 10), "_ZN2ns1fEv": ("F", 10)}
    assert vague_linkage_shape("_ZN5Shape4areaEv", is_class=class_lookup(exports))
    assert not vague_linkage_shape("_ZN2ns1fEv", is_class=class_lookup(exports))
    assert vague_linkage_shape("_ZNK2ns5Shape4areaEv")  # a const member function


def test_vendored_library_soname_change_is_private():
    a = {"p.libs/libsodium.so.26.2.0": lib(soname="libsodium-14725a37.so.26.2.0")}
    b = {"p.libs/libsodium.so.26.4.0": lib(soname="libsodium-1c6bac97.so.26.4.0")}
    d = diff_manifests(manifest(a), manifest(b))
    assert not d.findings and d.filtered["grafted-library-soname"] == 1
    assert [p.how for p in d.pairs] == ["stem"]


def test_abidiff_report_keeps_its_lines_in_text_and_markdown():
    from xcompat.abi.abigail import REPORT_LINES, _fold_report
    from xcompat.abi.render import render_markdown, render_text

    report = _fold_report("\n".join(f"  [D] f{i}()" for i in range(REPORT_LINES + 5)))
    assert report.count("\n") == REPORT_LINES + 1 and report.endswith("run abidiff for the full report")
    doc = {"old": {"name": "a", "version": "1"}, "new": {"name": "a", "version": "2"}, "status": "failed",
           "summary": "x", "required_bump": "major", "actual_bump": None, "filtered": {}, "unchecked": [],
           "findings": [{"kind": "abidiff_incompatible", "library": "libx.so", "symbol": None, "demangled": None,
                         "required_bump": "major", "detail": "abidiff: incompatible ABI change:" + report}]}
    assert "\n        [D] f1()" in render_text(doc)
    md = render_markdown(doc)
    assert "\n  ```\n" in md and "\n    [D] f1()" in md


def test_copies_of_one_library_pair_by_version_shape_and_are_compared_once():
    def arrow(version, syms):
        return lib(soname=f"libarrow_python.so.{version}", exports={s: ("f", 0) for s in syms})

    old = {f"pa/libarrow_python{suffix}": arrow("2400", ("a", "b")) for suffix in (".so", ".so.2400", ".so.2400.0.0")}
    new = {f"pa/libarrow_python{suffix}": arrow("2500", ("a",)) for suffix in (".so", ".so.2500", ".so.2500.1.0")}
    d = diff_manifests(manifest(old), manifest(new))
    assert sorted(p.how for p in d.pairs) == ["path", "stem", "stem"]
    assert found(d) == {("soname_changed", None), ("symbol_removed", "b")}
    assert d.filtered["library-copy"] == 2


def test_the_filtered_counts_are_written_in_a_stable_order():
    # Filtered symbols are classified while iterating sets of names, whose order follows the
    # process's string hash seed: the JSON used to list the same counts in a different order
    # from one run to the next.

    a = lib(exports={"internal_f": ("f", 0), "api": ("f", 0)})
    b = lib(exports={"api": ("f", 0)})
    d = diff_manifests(manifest({"l": a}), manifest({"l": b}), policy={"rules": {}, "ignore": ["internal_*"]})
    shuffled = d._replace(filtered={"vague-linkage": 2, "linker": 1, "stdlib": 3})
    assert list(shuffled.to_dict()["filtered"]) == ["linker", "stdlib", "vague-linkage"]
