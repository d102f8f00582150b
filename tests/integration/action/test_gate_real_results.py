"""The gate on results the real stages wrote: `xcompat abi diff` of two compiled libraries."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers.action import Repo, checks_by_name, run_gate

from xcompat.jsonio import read_json, validate

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")

V1 = "int foo(void) { return 1; }\nint bar(void) { return 2; }\n"
V2 = "int foo(void) { return 1; }\nint baz(void) { return 3; }\n"  # bar removed: a major change


@pytest.fixture(scope="module")
def abi_diff(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("abi")
    for name, source in (("old", V1), ("new", V2)):
        (root / name).mkdir()
        (root / name / "lib.c").write_text(source)
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(root / name / "libsample.so"), str(root / name / "lib.c"),
                        "-Wl,-soname,libsample.so.1"], check=True)
    out = root / "abi-diff.json"
    proc = subprocess.run([sys.executable, "-m", "xcompat", "abi", "diff", str(root / "old" / "libsample.so"),
                           str(root / "new" / "libsample.so"), "--format", "json", "--output", str(out)],
                          capture_output=True, text=True, check=False)
    assert out.is_file(), proc.stderr
    validate("abi-diff", read_json(out))
    return out


@pytest.mark.parametrize(("previous", "tag", "allowed"), [("v1.4.2", "v1.5.0", False), ("v1.4.2", "v2.0.0", True),
                                                           ("v0.3.0", "v0.4.0", True), ("v0.3.0", "v0.3.1", False)])
def test_real_abi_diff_against_real_tags(tmp_path: Path, abi_diff: Path, previous: str, tag: str,
                                         allowed: bool) -> None:
    repo = Repo(tmp_path / "repo")
    repo.commit()
    repo.tag(previous)
    repo.commit()
    repo.tag(tag)
    # an ABI-only gate without a plan: no matrix to verify here, so the documented insecure flag
    rc, out, doc = run_gate(repo.path, "--abi", str(abi_diff), "--tag", tag, "--insecure-no-verify")
    check = checks_by_name(doc)["version-bump"]
    assert check["passed"] is allowed, out
    assert rc == (0 if allowed else 1)
    assert check["details"]["required_bump"] == "major"
    assert check["reason"].startswith(f"got a {doc['release']['bump']} bump ({previous} -> {tag}), expected at least major")
