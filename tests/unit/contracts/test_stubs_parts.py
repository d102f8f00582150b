"""The stubs check's parts: stubtest's concise output, the allowlist, which modules are asked."""

from __future__ import annotations

from pathlib import Path

import pytest

from xcompat.contracts.allowlist import check_allowlist
from xcompat.contracts.stubs import stubbed_modules
from xcompat.contracts.stubtest_output import MAX_FINDINGS, parse_concise
from xcompat.errors import InputError

CONCISE = """\
pkg._core.random_seed is not present at runtime
pkg._core.scale is inconsistent, stub does not have parameter "offset"
pkg.CONST variable differs from runtime type int
pkg.extra is not present in stub
note: unused allowlist entry pkg\\.gone
"""


def test_concise_lines_become_findings() -> None:
    out = parse_concise(CONCISE)
    assert [(f.code, f.fields["object"]) for f in out.findings] == [
        ("missing-at-runtime", "pkg._core.random_seed"),
        ("inconsistent", "pkg._core.scale"),
        ("type-differs", "pkg.CONST"),
        ("missing-in-stub", "pkg.extra"),
        ("unused-allowlist-entry", "pkg\\.gone"),
    ]
    assert out.findings[1].fields["problem"] == 'is inconsistent, stub does not have parameter "offset"'
    assert out.other == []


@pytest.mark.parametrize("text", [
    "error: not checking stubs due to failed mypy compile:\n/x/_core.pyi: error: Duplicate module\n",
    "Traceback (most recent call last):\n  File \"x\", line 1\nre.error: missing )\n",
    "\0\x01 binary junk\n",
    "1notanidentifier is broken\n",
])
def test_lines_that_are_not_findings_are_kept_apart(text: str) -> None:
    out = parse_concise(text)
    assert out.findings == []
    assert out.other


def test_endless_output_is_cut() -> None:
    out = parse_concise("pkg.f is not present at runtime\n" * (MAX_FINDINGS + 10))
    assert len(out.findings) == MAX_FINDINGS
    assert out.truncated


def test_allowlist_entries_and_errors(tmp_path: Path) -> None:
    good = tmp_path / "allow.txt"
    good.write_text("# reasons\n\npkg\\._core\\.random_seed  # not bound yet\npkg\\.x\\..*\n")
    assert check_allowlist(good) == ["pkg\\._core\\.random_seed", "pkg\\.x\\..*"]
    bad = tmp_path / "bad.txt"
    bad.write_text("pkg\\.ok\n(((\n")
    with pytest.raises(InputError, match="not a regular expression") as info:
        check_allowlist(bad)
    assert info.value.line == 2
    bad.write_text("a" * 2000 + "\n")
    with pytest.raises(InputError, match="over the limit"):
        check_allowlist(bad)
    bad.write_bytes(b"\xff\xfe\x00junk")
    with pytest.raises(InputError):
        check_allowlist(bad)
    with pytest.raises(InputError, match="not found"):
        check_allowlist(tmp_path / "missing.txt")


def test_stubbed_modules(tmp_path: Path) -> None:
    for name in ("pkg/__init__.pyi", "pkg/_core.pyi", "pkg/sub/mod.pyi", "other-stubs/__init__.pyi",
                 "pkg-1.0.dist-info/x.pyi", "pkg/plain.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    assert stubbed_modules(tmp_path) == ["other", "pkg", "pkg._core", "pkg.sub.mod"]


def test_compiled_module_of_a_typed_package_without_a_stub(tmp_path: Path) -> None:
    import shutil
    import subprocess

    from xcompat.contracts.stubs import missing_stubs

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "py.typed").write_text("")
    (tmp_path / "m.c").write_text("void *PyInit__fast(void) { return 0; }\nint helper(void) { return 1; }\n")
    for name in ("_fast.cpython-311-x86_64-linux-gnu.so", "libhelper.so"):
        subprocess.run([cc, "-shared", "-fPIC", "-o", str(pkg / name), str(tmp_path / "m.c")], check=True)
    # libhelper.so exports PyInit__fast, not PyInit_libhelper: a library, not a module
    (pkg / "_broken.so").write_bytes(b"\x7fELF garbage")
    found = missing_stubs(tmp_path)
    assert [(f.code, f.fields["object"]) for f in found] == [("missing-stub", "pkg._fast")]
    (pkg / "_fast.pyi").write_text("")
    assert missing_stubs(tmp_path) == []
    (pkg / "py.typed").unlink()
    (pkg / "_fast.pyi").unlink()
    assert missing_stubs(tmp_path) == []  # no py.typed: no promise of types
