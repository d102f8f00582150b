"""Gating Python-API findings are checked against the imported package before they gate:
griffe's static view is compared with what ``import`` really exposes, in an isolated
interpreter, on small real wheels (griffe and the wheel's code really run)."""

from __future__ import annotations

import pytest
from tests.helpers.abi import make_wheel

from xcompat.abi import diff_paths

pytest.importorskip("griffe")

V1 = '''
def kept(a, b=1):
    return a + b

def dynamic():
    return 1

def really_gone():
    return 2

def narrowed(a, b=1):
    return a
'''
# v2: "dynamic" is only reachable through a module __getattr__ (griffe cannot see it),
# "really_gone" is gone, "narrowed" lost a parameter
V2 = '''
def kept(a, b=1, c=2):
    return a + b + c

def narrowed(a):
    return a

def __getattr__(name):
    if name == "dynamic":
        return lambda: 1
    raise AttributeError(name)
'''


def kinds(doc):
    return {(f.kind, f.symbol) for f in doc.findings}


def test_findings_are_confirmed_or_dropped_by_the_imported_package(tmp_path):
    old = make_wheel(tmp_path / "a", name="vpkg", version="1.0.0", tag="py3-none-any", files={"vpkg/__init__.py": V1})
    new = make_wheel(tmp_path / "b", name="vpkg", version="1.1.0", tag="py3-none-any", files={"vpkg/__init__.py": V2})
    doc = diff_paths(old, new, python_api="on", torch_ops="off", parallel=False)
    got = kinds(doc)
    assert ("python_api_removed", "vpkg.really_gone") in got
    assert ("python_signature_changed", "vpkg.narrowed") in got
    assert ("python_api_removed", "vpkg.dynamic") not in got  # still importable: griffe's blind spot
    assert doc.filtered["python-api-runtime"] == 1
    assert ("python_signature_extended", "vpkg.kept") in got


def test_a_wheel_that_cannot_be_imported_here_gives_unverified_findings_that_do_not_gate(tmp_path):
    old = make_wheel(tmp_path / "a", name="vpkg", version="1.0.0", tag="py3-none-any", files={"vpkg/__init__.py": V1})
    # imports a dependency this interpreter does not have
    broken = "import xcompat_no_such_dependency\n" + V2
    new = make_wheel(tmp_path / "b", name="vpkg", version="1.1.0", tag="py3-none-any", files={"vpkg/__init__.py": broken})
    doc = diff_paths(old, new, python_api="on", torch_ops="off", parallel=False)
    unverified = [f for f in doc.findings if f.kind == "python_api_unverified"]
    assert {f.symbol for f in unverified} >= {"vpkg.really_gone", "vpkg.narrowed"}
    assert all("xcompat_no_such_dependency" in f.detail and f.required_bump == "none" for f in unverified)
    assert doc.status == "passed"
    gated = diff_paths(old, new, python_api="on", torch_ops="off", parallel=False,
                       policy={"python_api_unverified": "major"})
    assert gated.status == "failed"


def test_extracted_api_is_cached_per_wheel_content(tmp_path, monkeypatch):
    monkeypatch.setenv("XCOMPAT_CACHE", str(tmp_path / "cache"))
    from xcompat.abi.pyapi import cache_path

    whl = make_wheel(tmp_path / "a", name="vpkg", version="1.0.0", tag="py3-none-any", files={"vpkg/__init__.py": V1})
    diff_paths(whl, whl, python_api="on", torch_ops="off", parallel=False)
    assert cache_path(whl).is_file()
