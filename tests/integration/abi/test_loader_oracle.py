"""The dynamic loader as the oracle of ``abi diff``.

For each toy library pair with a known change, one consumer per referenced symbol is linked
against v1 and run against v2 with ``LD_BIND_NOW=1`` (every reference bound at start). The
symbol breaks when, per case:

* ``loader``: the loader refuses to run the consumer (undefined symbol, version not found,
  library not found);
* ``output``: the loader is silent (TLS layout, vtable slots) and the consumer prints a
  different value against v2 than against v1;
* ``copy-reloc``: glibc warns that a copy-relocated object changed size
  ("has different size in shared object").

``abi diff`` of the two libraries must agree, symbol by symbol: a breaking finding (one that
needs a major bump) naming the symbol, or a library-level breaking finding, exactly when the
oracle sees a break.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from xcompat.abi import diff_paths

pytestmark = pytest.mark.skipif(
    shutil.which("gcc") is None or shutil.which("g++") is None, reason="gcc/g++ not installed: cannot build the toy libraries"
)

LIBRARY_LEVEL_BREAKS = {"soname_changed", "library_removed"}


@dataclass(frozen=True)
class Lib:
    src: str
    script: str | None = None
    soname: str = "libtoy.so.1"
    flags: tuple[str, ...] = ("-O2",)
    cxx: bool = False
    header: str | None = None  # written as toy.h next to the library; consumers include it


@dataclass(frozen=True)
class Ref:
    """One consumer: ``code`` is its body; it prints what it observed."""

    symbol: str  # the base name xcompat reports (mangled for C++)
    code: str
    cxx: bool = False
    no_pie: bool = False


@dataclass(frozen=True)
class Case:
    name: str
    oracle: str  # "loader" | "output" | "copy-reloc"
    v1: Lib
    v2: Lib
    refs: tuple[Ref, ...]
    expect_breaks: frozenset[str] = field(default_factory=frozenset)  # what the loader should show


def _call(name: str, decl: str = "int {n}(void);") -> str:
    return f'#include <stdio.h>\n{decl.format(n=name)}\nint main(void) {{ printf("%d\\n", {name}()); return 0; }}\n'


def _call_at(name: str, version: str) -> str:
    return (f'#include <stdio.h>\nint {name}_at(void);\n__asm__(".symver {name}_at,{name}@{version}");\n'
            f'int main(void) {{ printf("%d\\n", {name}_at()); return 0; }}\n')


COMPAT_V1 = """
int foo_v1(void) { return 1; }
int foo_v2(void) { return 2; }
__asm__(".symver foo_v1,foo@V1");
__asm__(".symver foo_v2,foo@@V2");
int keep(void) { return 7; }
"""
COMPAT_V2 = """
int foo_v2(void) { return 2; }
__asm__(".symver foo_v2,foo@@V2");
int keep(void) { return 7; }
"""
SHAPE_V1 = """
struct Shape { virtual int area(); virtual ~Shape(); };
int Shape::area() { return 10; }
Shape::~Shape() {}
Shape* make_shape() { return new Shape(); }
"""
SHAPE_V2 = """
struct Shape { virtual int perimeter(); virtual int area(); virtual ~Shape(); };
int Shape::perimeter() { return 99; }
int Shape::area() { return 10; }
Shape::~Shape() {}
Shape* make_shape() { return new Shape(); }
"""
SHAPE_USER = """
#include <cstdio>
struct Shape { virtual int area(); virtual ~Shape(); };
Shape* make_shape();
int main() { std::printf("%d\\n", make_shape()->area()); return 0; }
"""
WEAK_V1 = """
namespace ns {
__attribute__((weak)) int explicit_weak() { return 3; }
template <class T> T twice(T x) { return 2 * x; }
int use_twice() { return twice(21); }
}
"""
WEAK_V2 = """
namespace ns { int use_twice() { return 42; } }
"""

# With debug info, DWARF says where each WEAK function is defined: the header (inline, a
# template defined there: consumers carry a copy) or the library's source (an explicitly weak
# hook, a template explicitly instantiated in the .cc: consumers bind to it). The shape alone
# would call thrice<int> vague linkage; the loader and DWARF say it breaks.
DWARF_HEADER = """
namespace ns {
inline int inl(int x) { return x + 1; }
template <class T> T twice(T x) { return 2 * x; }
template <class T> T thrice(T x);
extern template int thrice<int>(int);
int explicit_weak();
}
"""
DWARF_V1 = """
#include "toy.h"
namespace ns {
__attribute__((weak)) int explicit_weak() { return 3; }
template <class T> T thrice(T x) { return 3 * x; }
template int thrice<int>(int);
int use() { return inl(1) + twice(2); }
}
"""
DWARF_V2 = """
namespace ns { int use() { return 5; } }
"""


def _dwarf_user(call: str) -> str:
    return f'#include <cstdio>\n#include "toy.h"\nint main() {{ std::printf("%d\\n", {call}); return 0; }}\n'


CASES = (
    Case("removed", "loader",
         Lib("int kept(void) { return 1; }\nint gone(void) { return 2; }\n"),
         Lib("int kept(void) { return 1; }\n"),
         (Ref("kept", _call("kept")), Ref("gone", _call("gone"))), frozenset({"gone"})),
    Case("weak-cxx", "loader",
         Lib(WEAK_V1, cxx=True, flags=("-O0",)), Lib(WEAK_V2, cxx=True, flags=("-O0",)),
         (Ref("_ZN2ns13explicit_weakEv",
              '#include <cstdio>\nnamespace ns { int explicit_weak(); }\n'
              'int main() { std::printf("%d\\n", ns::explicit_weak()); return 0; }\n', cxx=True),
          Ref("_ZN2ns5twiceIiEET_S1_",
              '#include <cstdio>\nnamespace ns { template <class T> T twice(T x) { return 2 * x; } }\n'
              'int main() { std::printf("%d\\n", ns::twice(4)); return 0; }\n', cxx=True)),
         frozenset({"_ZN2ns13explicit_weakEv"})),
    Case("weak-cxx-dwarf", "loader",
         Lib(DWARF_V1, cxx=True, flags=("-O0", "-g"), header=DWARF_HEADER),
         Lib(DWARF_V2, cxx=True, flags=("-O0", "-g"), header=DWARF_HEADER),
         (Ref("_ZN2ns13explicit_weakEv", _dwarf_user("ns::explicit_weak()"), cxx=True),
          Ref("_ZN2ns6thriceIiEET_S1_", _dwarf_user("ns::thrice(4)"), cxx=True),
          Ref("_ZN2ns3inlEi", _dwarf_user("ns::inl(4)"), cxx=True),
          Ref("_ZN2ns5twiceIiEET_S1_", _dwarf_user("ns::twice(4)"), cxx=True)),
         frozenset({"_ZN2ns13explicit_weakEv", "_ZN2ns6thriceIiEET_S1_"})),
    Case("versioned-moved", "loader",
         Lib("int bar(void) { return 1; }\nint baz(void) { return 2; }\n", script="V1 { global: bar; baz; local: *; };"),
         Lib("int bar(void) { return 1; }\nint baz(void) { return 2; }\n",
             script="V1 { global: baz; local: *; };\nV2 { global: bar; } V1;"),
         (Ref("bar", _call("bar")), Ref("baz", _call("baz"))), frozenset({"bar"})),
    Case("compat-alias-dropped", "loader",
         Lib(COMPAT_V1, script="V1 { global: foo; local: *; };\nV2 { global: foo; keep; } V1;"),
         Lib(COMPAT_V2, script="V1 { local: *; };\nV2 { global: foo; keep; } V1;"),
         (Ref("foo@V1", _call_at("foo", "V1")), Ref("foo@V2", _call("foo")), Ref("keep", _call("keep"))),
         frozenset({"foo@V1"})),
    Case("version-script-added", "loader",
         Lib("int f(void) { return 1; }\nint g(void) { return 2; }\n"),
         Lib("int f(void) { return 1; }\nint g(void) { return 2; }\nint h(void) { return 3; }\n",
             script="V1 { global: f; g; local: *; };\nV2 { global: h; } V1;"),
         (Ref("f", _call("f")), Ref("g", _call("g"))), frozenset()),
    Case("soname-renamed", "loader",
         Lib("int f(void) { return 1; }\n"), Lib("int f(void) { return 1; }\n", soname="libtoy.so.2"),
         (Ref("f", _call("f")),), frozenset({"f"})),
    Case("tls-grown-with-version-script", "output",
         Lib("struct S { long a; };\n__thread struct S tls_s;\nvoid set_a(long v) { tls_s.a = v; }\n"),
         Lib("struct S { long pad; long a; };\n__thread struct S tls_s;\nvoid set_a(long v) { tls_s.a = v; }\n",
             script="V1 { global: tls_s; set_a; local: *; };"),
         (Ref("tls_s", '#include <stdio.h>\nstruct S { long a; };\nextern __thread struct S tls_s;\n'
                       'void set_a(long);\nint main(void) { set_a(42); printf("%ld\\n", tls_s.a); return 0; }\n'),
          Ref("set_a", '#include <stdio.h>\nvoid set_a(long);\nint main(void) { set_a(1); printf("ok\\n"); return 0; }\n')),
         frozenset({"tls_s"})),
    Case("object-grown", "copy-reloc",
         Lib("int table[2] = {1, 2};\nint first(void) { return table[0]; }\n"),
         Lib("int table[4] = {1, 2, 3, 4};\nint first(void) { return table[0]; }\n"),
         (Ref("table", '#include <stdio.h>\nextern int table[2];\nint main(void) { printf("%d\\n", table[1]); return 0; }\n',
              no_pie=True),
          Ref("first", _call("first"))),
         frozenset({"table"})),
    Case("vtable-grown", "output",
         Lib(SHAPE_V1, cxx=True), Lib(SHAPE_V2, cxx=True),
         (Ref("_ZTV5Shape", SHAPE_USER, cxx=True),), frozenset({"_ZTV5Shape"})),
    Case("rebuild-other-flags", "loader",
         Lib("int table[2] = {1, 2};\nint f(void) { return table[1]; }\n__thread int t;\nint g(void) { return ++t; }\n",
             script="V1 { global: f; g; t; table; local: *; };", flags=("-O2",)),
         Lib("int table[2] = {1, 2};\nint f(void) { return table[1]; }\n__thread int t;\nint g(void) { return ++t; }\n",
             script="V1 { global: f; g; t; table; local: *; };", flags=("-O0", "-fno-plt", "-fno-omit-frame-pointer")),
         (Ref("f", _call("f")), Ref("g", _call("g"))), frozenset()),
)


def _build_lib(lib: Lib, out: Path, filename: str) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    src = out / ("toy.cc" if lib.cxx else "toy.c")
    src.write_text(lib.src)
    if lib.header is not None:
        (out / "toy.h").write_text(lib.header)
    cmd = ["g++" if lib.cxx else "gcc", *lib.flags, "-fPIC", "-shared", f"-Wl,-soname,{lib.soname}", "-o",
           str(out / filename), str(src)]
    if lib.script:
        (out / "toy.map").write_text(lib.script)
        cmd.append(f"-Wl,--version-script={out / 'toy.map'}")
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    # the name the loader looks for (DT_NEEDED of consumers is the SONAME)
    link = out / lib.soname
    if not link.exists():
        link.symlink_to(filename)
    (out / "libtoy.so").unlink(missing_ok=True)
    (out / "libtoy.so").symlink_to(filename)
    return out / filename


def _build_consumer(ref: Ref, libdir: Path, out: Path) -> Path:
    src = out.with_suffix(".cc" if ref.cxx else ".c")
    src.write_text(ref.code)
    cmd = ["g++" if ref.cxx else "gcc", "-O0", *(["-no-pie"] if ref.no_pie else []), f"-I{libdir}", "-o", str(out),
           str(src), f"-L{libdir}", "-ltoy"]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return out


def _run(exe: Path, libdir: Path) -> tuple[int, str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LD_LIBRARY_PATH": str(libdir), "LD_BIND_NOW": "1"}
    p = subprocess.run([str(exe)], capture_output=True, text=True, env=env, timeout=30, check=False)
    return p.returncode, p.stdout, p.stderr


def _oracle_breaks(case: Case, exe: Path, dir1: Path, dir2: Path) -> bool:
    rc1, out1, _err1 = _run(exe, dir1)
    assert rc1 == 0, f"{case.name}: the consumer does not even run against v1"
    rc2, out2, err2 = _run(exe, dir2)
    if rc2 != 0:  # every oracle: a loader refusal is a break
        assert "error while loading shared libraries" in err2 or "symbol lookup error" in err2, err2
        return True
    if case.oracle == "output":
        return out1 != out2
    if case.oracle == "copy-reloc":
        return "different size in shared object" in err2
    return False


def _xcompat_breaks(doc, refs: tuple[Ref, ...]) -> set[str]:
    broken: set[str] = set()
    for f in doc.findings:
        if f.required_bump != "major":
            continue
        if f.kind in LIBRARY_LEVEL_BREAKS:
            broken |= {r.symbol for r in refs}
        elif f.symbol is not None:
            base, _, ver = f.symbol.partition("@")
            for r in refs:
                rb, _, rv = r.symbol.partition("@")
                if rb == base and (not rv or not ver or rv == ver):
                    broken.add(r.symbol)
    return broken


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_verdict_agrees_with_the_loader(case: Case, tmp_path: Path):
    dir1, dir2 = tmp_path / "v1", tmp_path / "v2"
    # different file names on purpose: two files given explicitly are compared with each other
    lib1 = _build_lib(case.v1, dir1, "libtoy.so.1.0.0")
    lib2 = _build_lib(case.v2, dir2, "libtoy.so.1.0.1")
    if case.v2.soname != case.v1.soname:
        (dir2 / case.v1.soname).unlink(missing_ok=True)  # only the new SONAME is installed
    loader: dict[str, bool] = {}
    for i, ref in enumerate(case.refs):
        exe = _build_consumer(ref, dir1, tmp_path / f"consumer{i}")
        loader[ref.symbol] = _oracle_breaks(case, exe, dir1, dir2)
    assert {s for s, b in loader.items() if b} == case.expect_breaks, f"{case.name}: the oracle itself changed: {loader}"
    doc = diff_paths(lib1, lib2, python_api="off", torch_ops="off", parallel=False)
    assert [(p.old_key, p.new_key, p.how) for p in doc.pairs] == [("libtoy.so.1.0.0", "libtoy.so.1.0.1", "explicit")]
    ours = _xcompat_breaks(doc, case.refs)
    disagree = {s: ("loader breaks" if loader[s] else "loader binds") for s in loader if loader[s] != (s in ours)}
    assert not disagree, f"{case.name}: xcompat disagrees with the loader on {disagree}: " + "; ".join(
        f"{f.kind} {f.symbol} ({f.required_bump})" for f in doc.findings)


def test_size_growth_under_a_new_version_script_is_reported_once_by_base_name(tmp_path: Path):
    case = next(c for c in CASES if c.name == "tls-grown-with-version-script")
    lib1 = _build_lib(case.v1, tmp_path / "v1", "libtoy.so.1.0.0")
    lib2 = _build_lib(case.v2, tmp_path / "v2", "libtoy.so.1.0.1")
    doc = diff_paths(lib1, lib2, python_api="off", torch_ops="off", parallel=False)
    got = sorted((f.kind, f.symbol, f.old, f.new) for f in doc.findings)
    assert got == [("object_size_changed", "tls_s", 8, 16), ("symbol_versioning_added", None, None, None)]
    assert "thread-local" in next(f.detail for f in doc.findings if f.kind == "object_size_changed")


def test_build_audit_and_abi_diff_read_the_same_absolute_runpath(tmp_path: Path):
    """One ELF reader: the build audit sees the leaked absolute RUNPATH ``abi diff`` flags."""
    from tests.helpers.abi import make_wheel

    from xcompat.builder.audit import absolute_search_paths, policy_symbols

    clean = _build_lib(Lib("int f(void) { return 1; }\n"), tmp_path / "clean", "libtoy.so.1")
    leaky = _build_lib(Lib("#include <stdio.h>\nint f(void) { return puts(\"f\"); }\n",
                           flags=("-O2", "-Wl,-rpath,/home/builder/leak")),
                       tmp_path / "leaky", "libtoy.so.1")
    old = make_wheel(tmp_path / "w1", version="1.0.0", files={"demo/libtoy.so.1": clean})
    new = make_wheel(tmp_path / "w2", version="1.0.1", files={"demo/libtoy.so.1": leaky})
    assert absolute_search_paths(old) == {}
    assert absolute_search_paths(new) == {"demo/libtoy.so.1": ["/home/builder/leak"]}
    doc = diff_paths(old, new, python_api="off", torch_ops="off", parallel=False)
    assert [(f.kind, f.new) for f in doc.findings if f.kind == "rpath_absolute_added"] == [
        ("rpath_absolute_added", "/home/builder/leak")]
    set_by = policy_symbols(new, "manylinux_2_17_x86_64")
    assert set_by and all(s["library"] == "libc.so.6" for s in set_by)


def test_build_record_stores_the_leaked_absolute_runpath(tmp_path: Path):
    """``build.json`` keeps what the audit found: per member, the absolute search paths."""
    import json
    import sys

    from tests.helpers.abi import make_wheel

    from xcompat import jsonio
    from xcompat.builder.native import BuiltWheel, IsolationChoice
    from xcompat.builder.record import audit_built_wheel, build_document

    leaky = _build_lib(Lib("int f(void) { return 2; }\n", flags=("-O2", "-Wl,-rpath,/opt/ci/leak:$ORIGIN")),
                       tmp_path / "leaky", "libtoy.so.1")
    clean = _build_lib(Lib("int f(void) { return 3; }\n"), tmp_path / "clean", "libtoy.so.1")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    entries = []
    for name, lib in (("leaky", leaky), ("clean", clean)):
        wheel = make_wheel(tmp_path / name / "w", version="1.0.0", files={"demo/libtoy.so.1": lib})
        built = BuiltWheel(path=wheel, cell_id=None, build_seconds=0.0, repair_seconds=0.0, repair_tool="none",
                           excluded=(), log=tmp_path / "build.log", isolation=IsolationChoice(isolated=False, reason="test"), ccache=False)
        entries.append(audit_built_wheel(built, env=env, out_dir=tmp_path, backend="native"))
    assert entries[0]["absolute_search_paths"] == {"demo/libtoy.so.1": ["/opt/ci/leak"]}
    assert entries[1]["absolute_search_paths"] == {}
    record = build_document(project=tmp_path, backend="native", wheels=entries,
                            cells=[{"id": "c", "status": "passed", "wheels": [e["file"] for e in entries]}], seconds=1.0)
    jsonio.validate("build", json.loads(json.dumps(record)))


def test_corrupt_dwarf_is_no_evidence_not_an_error(tmp_path: Path):
    from xcompat.abi.elf import read_elf
    from xcompat.abi.elf.dwarf import definition_origins

    lib = _build_lib(Lib(DWARF_V1, cxx=True, flags=("-O0", "-g"), header=DWARF_HEADER), tmp_path / "ok", "libtoy.so.1")
    good = definition_origins(lib)
    assert good is not None and good.origin("_ZN2ns13explicit_weakEv") == "source"
    assert good.origin("_ZN2ns3inlEi") == "header"
    data = bytearray(lib.read_bytes())
    info = read_elf(lib)
    assert info.debug_info
    # overwrite every byte of .debug_info / .debug_abbrev / .debug_line with garbage
    import struct

    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = secs[shstrndx]
    for sh in secs:
        name = bytes(data[names[4] + sh[0]: names[4] + sh[0] + 16]).split(b"\0")[0]
        if name in (b".debug_info", b".debug_abbrev", b".debug_line"):
            data[sh[4]: sh[4] + sh[5]] = bytes((i * 37 + 11) % 256 for i in range(sh[5]))
    bad = tmp_path / "bad.so"
    bad.write_bytes(bytes(data))
    origins = definition_origins(bad)  # must not raise
    assert origins is None or isinstance(origins.header, frozenset)


def _gcc_lib(out: Path, name: str, src: str, *extra: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.c").write_text(src)
    # --no-as-needed: every version links libc the same way (no glibc floor finding in between)
    subprocess.run(["gcc", "-O2", "-fPIC", "-shared", f"-Wl,-soname,{name}.so", "-o", str(out / f"{name}.so"),
                    str(out / f"{name}.c"), "-Wl,--no-as-needed", *extra, "-lc"], check=True, capture_output=True,
                   text=True)
    (out / f"{name}.c").unlink()


def test_a_symbol_moved_to_a_library_it_loads_binds_and_is_not_a_break(tmp_path: Path):
    # bar() moves from liba to libb. When the new liba NEEDs libb, the loader finds bar() in
    # liba's dependency tree and a program linked against the old liba runs; when it does not,
    # the program fails with "undefined symbol". The verdict must follow the loader both ways.
    v1, loads, not_loaded = tmp_path / "v1", tmp_path / "loads", tmp_path / "not-loaded"
    _gcc_lib(v1, "liba", "int foo(void) { return 1; }\nint bar(void) { return 2; }\n")
    for d in (loads, not_loaded):
        _gcc_lib(d, "libb", "int bar(void) { return 2; }\n")
    _gcc_lib(loads, "liba", "int foo(void) { return 1; }\n", f"-L{loads}", "-lb")
    _gcc_lib(not_loaded, "liba", "int foo(void) { return 1; }\n")
    src = tmp_path / "main.c"
    src.write_text('#include <stdio.h>\nint bar(void);\nint main(void) { printf("%d\\n", bar()); return 0; }\n')
    exe = tmp_path / "main"
    subprocess.run(["gcc", "-O0", "-o", str(exe), str(src), f"-L{v1}", "-la"], check=True, capture_output=True)
    assert _run(exe, v1)[:2] == (0, "2\n")
    assert _run(exe, loads)[:2] == (0, "2\n")  # the loader binds bar() in libb
    rc, _out, err = _run(exe, not_loaded)
    assert rc != 0 and "undefined symbol: bar" in err

    doc = diff_paths(v1, loads, python_api="off", torch_ops="off", parallel=False)
    kinds = {(f.kind, f.symbol): f for f in doc.findings}
    assert ("symbol_removed", "bar") not in kinds, [f.to_dict() for f in doc.findings]
    moved = kinds[("symbol_moved", "bar")]
    assert moved.required_bump == "none" and moved.new == "libb.so", moved.to_dict()
    assert "libb.so, which liba.so loads" in moved.detail
    assert doc.required_bump == "minor"  # libb.so is new; nothing breaks

    doc = diff_paths(v1, not_loaded, python_api="off", torch_ops="off", parallel=False)
    kinds = {(f.kind, f.symbol): f for f in doc.findings}
    assert kinds[("symbol_removed", "bar")].required_bump == "major"
    assert ("symbol_moved", "bar") not in kinds
    assert doc.required_bump == "major"


def test_a_data_object_that_moved_and_grew_is_still_a_break(tmp_path: Path):
    # A program that copy-relocated the 16-byte table from the old liba gets glibc's size
    # warning when the table comes from libb at 32 bytes; moved at the same size, it is silent.
    v1, same, grown = tmp_path / "v1", tmp_path / "same", tmp_path / "grown"
    _gcc_lib(v1, "liba", "int table[4] = {1, 2, 3, 4};\nint foo(void) { return 1; }\n")
    _gcc_lib(same, "libb", "int table[4] = {1, 2, 3, 4};\n")
    _gcc_lib(grown, "libb", "int table[8] = {1, 2, 3, 4, 5, 6, 7, 8};\n")
    for d in (same, grown):
        _gcc_lib(d, "liba", "int foo(void) { return 1; }\n", f"-L{d}", "-lb")
    src = tmp_path / "main.c"
    src.write_text('#include <stdio.h>\nextern int table[4];\nint main(void) { printf("%d\\n", table[3]); return 0; }\n')
    exe = tmp_path / "main"
    subprocess.run(["gcc", "-O0", "-no-pie", "-o", str(exe), str(src), f"-L{v1}", "-la"], check=True,
                   capture_output=True)
    assert "different size in shared object" not in _run(exe, same)[2]
    assert "different size in shared object" in _run(exe, grown)[2]

    kinds = {(f.kind, f.symbol): f.required_bump
             for f in diff_paths(v1, same, python_api="off", torch_ops="off", parallel=False).findings}
    assert kinds.get(("symbol_moved", "table")) == "none" and ("symbol_removed", "table") not in kinds, kinds
    found = {(f.kind, f.symbol): f for f in diff_paths(v1, grown, python_api="off", torch_ops="off",
                                                         parallel=False).findings}
    assert ("symbol_moved", "table") not in found, found
    removed = found[("symbol_removed", "table")]
    assert removed.required_bump == "major" and "libb.so exports it at another size than 16 bytes" in removed.detail
