"""The matrix key ``abi.extension-exports`` reaches ``xcompat abi diff``'s policy.

Two real extension modules (tests/helpers/abi.py, EXT_V1 -> EXT_V2) differ in an internal
C++ helper ``impl::only_in_v1``. By default it is extension-internal; a project that
declares ``impl`` as its C API in the signed matrix gets a ``symbol_removed`` for it, through
the path CI takes: matrix -> plan -> ``matrix settings --format abi-policy`` -> ``abi diff --policy``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers import abi as h
from tests.helpers.matrix import matrix_text

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")

REMOVED = "_ZN4impl10only_in_v1Ei"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI" and not k.startswith(("GITHUB_", "GITLAB"))}
    return subprocess.run([sys.executable, "-m", "xcompat", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


def _diff_through_the_plan(tmp_path: Path, abi_section: str) -> tuple[dict, dict]:
    (tmp_path / "m.yml").write_text(matrix_text(extra=abi_section))
    plan = _cli("matrix", "plan", "m.yml", "--format", "json", cwd=tmp_path)
    assert plan.returncode == 0, plan.stderr
    (tmp_path / "plan.json").write_text(plan.stdout)
    policy = _cli("matrix", "settings", "--plan", "plan.json", "--format", "abi-policy", cwd=tmp_path)
    assert policy.returncode == 0, policy.stderr
    (tmp_path / "policy.json").write_text(policy.stdout)
    old, new = h.build_extension("v1"), h.build_extension("v2")
    out = tmp_path / "diff.json"
    diff = _cli("abi", "diff", str(old), str(new), "--policy", "policy.json", "--python-api", "off",
                "--torch-ops", "off", "--fail-on", "none", "-o", str(out), cwd=tmp_path)
    assert diff.returncode == 0, diff.stderr
    return json.loads(policy.stdout), json.loads(out.read_text())


def test_declared_extension_exports_are_interface(tmp_path: Path):
    policy, doc = _diff_through_the_plan(tmp_path, 'abi:\n  extension-exports: ["_ZN4impl*", "demo_*"]\n')
    assert policy["extension_exports"] == ["_ZN4impl*", "demo_*"]
    removed = [f for f in doc["findings"] if f["kind"] == "symbol_removed"]
    assert [f["symbol"] for f in removed] == [REMOVED]
    assert removed[0]["required_bump"] == "major"


def test_without_the_key_the_package_prefix_convention_applies(tmp_path: Path):
    policy, doc = _diff_through_the_plan(tmp_path, "")
    assert "extension_exports" not in policy
    assert not [f for f in doc["findings"] if f.get("symbol") == REMOVED]
    assert doc["filtered"].get("extension-internal", 0) >= 1


def test_an_empty_list_declares_pyinit_only(tmp_path: Path):
    policy, doc = _diff_through_the_plan(tmp_path, "abi:\n  extension-exports: []\n")
    assert policy["extension_exports"] == []
    assert not [f for f in doc["findings"] if f["kind"] == "symbol_removed"]


def test_settings_documents_carry_the_key_and_older_ones_read_without_it():
    from xcompat.matrix import load_matrix
    from xcompat.settings import resolve_settings, settings_from_document

    m = load_matrix(matrix_text(extra='abi:\n  extension-exports: ["mylib_*"]\n').encode())
    doc = resolve_settings(m).to_dict()
    assert doc["settings"]["abi.extension-exports"] == ["mylib_*"]
    assert settings_from_document(doc).abi.extension_exports == ("mylib_*",)
    older = json.loads(json.dumps(doc))
    del older["settings"]["abi.extension-exports"]
    assert settings_from_document(older).abi.extension_exports is None


@pytest.mark.parametrize(("value", "message"), [
    ('"foo_*"', "is not of type 'array'"),
    ("[1]", "expected a string"),
    ('[""]', "should be non-empty"),
])
def test_a_malformed_value_is_a_one_line_input_error(value: str, message: str):
    from xcompat.errors import InputError
    from xcompat.matrix import load_matrix

    with pytest.raises(InputError, match=r"\$\.abi\.extension-exports") as exc:
        load_matrix(matrix_text(extra=f"abi:\n  extension-exports: {value}\n").encode())
    assert message in str(exc.value) and "\n" not in str(exc.value)
