"""The resolved settings: one defaults table, documented precedence, CI takes only the verified matrix."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers.matrix import make_key_with_ssh_keygen, matrix_text, sample_matrix_path, ssh_keygen

from xcompat.errors import InputError, UsageError
from xcompat.jsonio import validate
from xcompat.matrix import load_matrix
from xcompat.matrix.plan import expand, plan_document
from xcompat.resources import data_dir
from xcompat.settings import (
    defaults,
    resolve_settings,
    setting_keys,
    settings_from_document,
    settings_from_plan,
)

DOCS = Path(__file__).resolve().parents[3] / "docs" / "matrix.md"


def _documented_setting_keys() -> set[str]:
    """The keys of docs/matrix.md's "Keys" table under tests, abi, coverage, gate and contracts."""
    keys: set[str] = set()
    for line in DOCS.read_text().splitlines():
        if line.startswith("| `"):
            first_cell = line.split("|")[1]
            keys.update(k for k in re.findall(r"`([^`]+)`", first_cell)
                        if k.split(".")[0] in ("tests", "abi", "coverage", "gate", "contracts"))
    return keys


def test_the_defaults_table_has_exactly_the_documented_keys():
    documented = _documented_setting_keys()
    assert documented == set(setting_keys()), documented ^ set(setting_keys())


def test_matrix_defaults_come_from_the_one_table():
    from xcompat.matrix import defaults as D

    # the matrix's own tables hold no settings default: the settings table is their one home
    assert not [name for name in vars(D) if name.startswith("DEFAULT_") and name not in (
        "DEFAULT_RUNNERS", "DEFAULT_LINUX_POLICY", "DEFAULT_MACOS_DEPLOYMENT_TARGET", "DEFAULT_CIBUILDWHEEL_MAJOR")]
    m = load_matrix(matrix_text().encode())
    s = resolve_settings(m)
    for key in setting_keys():
        if key not in ("gate.required-backends",):
            assert s.value(key) == defaults()[key] or (key == "tests.timeout" and s.value(key) == 300.0), key


def test_matrix_wins_over_defaults_and_an_unset_option_never_wins():
    m = load_matrix(sample_matrix_path())
    s = resolve_settings(m, {"tests.timeout": None, "tests.isolation": None})
    assert s.tests.timeout == 120.0  # the sample's signed tests.timeout, not 300
    assert dict(s.abi.bumps) == {"glibc_floor_raised": "minor"}
    assert s.overridden == ()


def test_a_given_option_wins_locally_and_is_refused_in_ci():
    m = load_matrix(sample_matrix_path())
    s = resolve_settings(m, {"tests.timeout": 5}, env={})
    assert s.tests.timeout == 5.0 and s.overridden == ("tests.timeout",)
    with pytest.raises(UsageError, match="only from the verified matrix"):
        resolve_settings(m, {"tests.pytest-args": ["--deselect", "tests/test_ops.py::test_add"]}, env={"CI": "true"})


def test_unknown_or_unsettable_override_is_refused():
    m = load_matrix(sample_matrix_path())
    with pytest.raises(UsageError, match="did you mean 'tests.timeout'"):
        resolve_settings(m, {"tests.timout": 3})
    with pytest.raises(UsageError, match="cannot be set on the command line"):
        resolve_settings(m, {"abi.bumps": {}})
    with pytest.raises(UsageError, match="expected one of none, file, test"):
        resolve_settings(m, {"tests.isolation": "thread"})


def test_settings_are_frozen():
    s = resolve_settings(load_matrix(sample_matrix_path()))
    with pytest.raises(AttributeError):
        s.tests = None  # type: ignore[misc]


def test_plan_and_settings_json_carry_the_same_settings():
    m = load_matrix(sample_matrix_path())
    s = resolve_settings(m, signed=True)
    plan = json.loads(json.dumps(plan_document(m, expand(m))))
    from_plan = settings_from_plan(plan)
    assert from_plan.to_dict()["settings"] == s.to_dict()["settings"]
    assert from_plan.matrix_sha256 == m.sha256
    document = s.to_dict()
    validate("settings", document)
    assert settings_from_document(document) == s


@pytest.mark.parametrize(
    ("mutate", "where"),
    [
        (lambda p: p["settings"]["tests"].update(timeout="soon"), "$.settings.tests.timeout"),
        (lambda p: p["settings"]["tests"].update(pytest_args="--deselect x"), "$.settings.tests.pytest_args"),
        (lambda p: p["settings"]["abi"].update(bumps={"symbol_removed": "huge"}), "$.settings.abi.bumps"),
        (lambda p: p["settings"].update(tests=[]), "$.settings.tests"),
        (lambda p: p.update(settings=None), "$.settings"),
    ],
)
def test_malformed_plan_settings_name_the_place(mutate, where):
    m = load_matrix(sample_matrix_path())
    plan = json.loads(json.dumps(plan_document(m, expand(m))))
    mutate(plan)
    with pytest.raises(InputError, match=re.escape(where)):
        settings_from_plan(plan, source="plan.json")


def test_the_schema_and_the_readers_take_the_same_values():
    """settings.json is read by its readers and described by its schema: what one refuses, so does the other."""
    m = load_matrix(sample_matrix_path())
    document = resolve_settings(m).to_dict()
    hostile = {**document, "settings": {**document["settings"], "gate.tag-pattern": "v*\nLD_PRELOAD=/tmp/evil.so"}}
    with pytest.raises(InputError, match=re.escape("$.settings.gate.tag-pattern")):
        settings_from_document(hostile)
    with pytest.raises(InputError, match=re.escape("$.settings.gate.tag-pattern")):
        validate("settings", hostile)
    unknown = {**document, "settings": {**document["settings"], "gate.required-backends": ["tpu"]}}
    with pytest.raises(InputError, match=re.escape("$.settings.gate.required-backends")):
        validate("settings", unknown)
    with pytest.raises(InputError, match=re.escape("$.settings.gate.required-backends: expected a list of backends")):
        settings_from_document(unknown)
    plan = json.loads(json.dumps(plan_document(m, expand(m))))
    plan["settings"]["gate"]["required_backends"] = ["tpu"]
    with pytest.raises(InputError, match=re.escape("$.settings.gate.required_backends: expected a list of backends")):
        settings_from_plan(plan, source="plan.json")


def test_env_lines_json_encode_lists():
    s = resolve_settings(load_matrix(sample_matrix_path()))
    env = dict(line.split("=", 1) for line in s.to_env())
    assert json.loads(env["XCOMPAT_TESTS_PYTEST"]) == ["tests"]
    assert json.loads(env["XCOMPAT_ABI_BUMPS"]) == {"glibc_floor_raised": "minor"}
    assert env["XCOMPAT_TESTS_ISOLATION"] == "test"
    assert env["XCOMPAT_MATRIX_SHA256"] == s.matrix_sha256


# -- xcompat matrix settings, with a real signed matrix ---------------------------------


def _cli(*args: str, cwd: Path, ci: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI" and not k.startswith(("GITHUB_", "GITLAB"))}
    if ci:
        env["CI"] = "true"
    return subprocess.run([sys.executable, "-m", "xcompat", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.skipif(ssh_keygen() is None, reason="ssh-keygen is not installed")
def test_a_pull_request_cannot_add_deselect_in_ci(tmp_path: Path):
    """The PR copy of the matrix adds --deselect; CI reads the settings only from the verified matrix."""
    key = make_key_with_ssh_keygen(tmp_path, "maintainer")
    folder = tmp_path / ".xcompat"
    folder.mkdir()
    matrix = folder / "matrix.yml"
    matrix.write_text(matrix_text(extra="tests:\n  pytest: [tests]\n"))
    (folder / "allowed_signers").write_text(key.allowed_line() + "\n")
    signed = _cli("matrix", "sign", str(matrix), "--key", str(key.private), cwd=tmp_path, ci=False)
    assert signed.returncode == 0, signed.stderr
    verify = _cli("matrix", "verify", str(matrix), "--allowed-signers", str(folder / "allowed_signers"),
                  "--repo", "acme/widget", "--json", str(tmp_path / "verify.json"), cwd=tmp_path, ci=False)
    assert verify.returncode == 0, verify.stderr
    sha = json.loads((tmp_path / "verify.json").read_text())["sha256"]
    plan = _cli("matrix", "plan", str(matrix), "--format", "json", "-o", str(tmp_path / "plan.json"),
                "--expect-sha256", sha, cwd=tmp_path, ci=False)
    assert plan.returncode == 0, plan.stderr
    # the plan artifact carries the verified bytes the plan was made from
    shutil.copyfile(matrix, tmp_path / "verified.yml")

    # the pull request edits its copy of the matrix
    matrix.write_text(matrix.read_text().replace("pytest: [tests]",
                                                 'pytest: [tests]\n  pytest-args: ["--deselect", "tests/t.py::x"]'))
    direct = _cli("matrix", "settings", "--matrix", str(matrix), cwd=tmp_path, ci=True)
    assert direct.returncode == 3 and "only from the verified matrix" in direct.stderr
    pinned = _cli("matrix", "settings", "--matrix", str(matrix), "--expect-sha256", sha, cwd=tmp_path, ci=True)
    assert pinned.returncode == 3 and "expected " + sha in pinned.stderr
    forged = _cli("matrix", "plan", str(matrix), "--format", "json", "-o", str(tmp_path / "forged.json"),
                  cwd=tmp_path, ci=False)
    assert forged.returncode == 0
    refused = _cli("matrix", "settings", "--plan", "forged.json", "--matrix", "verified.yml", "--expect-sha256", sha,
                   cwd=tmp_path, ci=True)
    assert refused.returncode == 3, refused.stderr
    # the plan's own matrix_sha256 field is no evidence: without the verified bytes, nothing is printed
    unbound = _cli("matrix", "settings", "--plan", "plan.json", "--expect-sha256", sha, cwd=tmp_path, ci=True)
    assert unbound.returncode == 3 and unbound.stdout == "", unbound.stderr
    cell = json.loads((tmp_path / "plan.json").read_text())["cells"][0]["id"]
    ok = _cli("matrix", "settings", "--plan", "plan.json", "--matrix", "verified.yml", "--expect-sha256", sha,
              "--format", "json", "--cell", cell, cwd=tmp_path, ci=True)
    assert ok.returncode == 0, ok.stderr
    document = json.loads(ok.stdout)
    validate("settings", document)
    assert document["settings"]["tests.pytest-args"] == []
    assert document["matrix_sha256"] == sha and document["cell"]["required"] is True


def test_matrix_settings_unknown_cell_is_an_input_error(tmp_path: Path):
    (tmp_path / "m.yml").write_text(matrix_text())
    proc = _cli("matrix", "settings", "--matrix", "m.yml", "--cell", "py2.7-linux-x86_64-cpu", cwd=tmp_path, ci=False)
    assert proc.returncode == 2 and "is not in the plan" in proc.stderr and "Traceback" not in proc.stderr


def test_project_facts_find_torch_and_tests(tmp_path: Path):
    from xcompat.settings.project import find_tests, project_facts

    sample = data_dir("examples") / "sample-ext"
    assert project_facts(sample).uses_torch is True
    assert find_tests(sample) == (["tests"], [])
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "inpkg"\ndependencies = ["numpy>=2"]\n'
                                             '[build-system]\nrequires = ["setuptools", "Cython"]\n')
    (tmp_path / "inpkg" / "tests").mkdir(parents=True)
    (tmp_path / "inpkg" / "__init__.py").touch()
    facts = project_facts(tmp_path)
    assert facts.uses_torch is False and facts.name == "inpkg"
    assert find_tests(tmp_path) == (["inpkg.tests"], ["--pyargs"])
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "inpkg"\n[build-system]\nrequires = ["torch>=2.4"]\n')
    assert project_facts(tmp_path).uses_torch is True


def test_matrix_settings_gives_the_test_argv_and_the_abi_policy(tmp_path: Path):
    from xcompat.abi.rules import make_policy

    (tmp_path / "m.yml").write_text(matrix_text(extra='tests:\n  pytest: [pkg.tests]\n  pytest-args: ["--pyargs", "-x"]\n'
                                                      "  timeout: 90\n  isolation: file\n"
                                                      "abi:\n  bumps: {glibc_floor_raised: minor}\n  gate: [symbol_removed]\n"))
    argv = _cli("matrix", "settings", "--matrix", "m.yml", "--format", "test-argv", cwd=tmp_path, ci=False)
    assert argv.returncode == 0, argv.stderr
    assert argv.stdout.splitlines() == ["pkg.tests", "--isolate", "file", "--timeout", "90", "--", "--pyargs", "-x"]
    (tmp_path / "paths.yml").write_text(matrix_text(extra="tests:\n  pytest: [tests/unit, tests/int]\n"))
    under = _cli("matrix", "settings", "--matrix", "paths.yml", "--project", "proj", "--format", "test-argv",
                 cwd=tmp_path, ci=False)
    assert under.stdout.splitlines()[:2] == ["proj/tests/unit", "proj/tests/int"]
    policy = _cli("matrix", "settings", "--matrix", "m.yml", "--format", "abi-policy", cwd=tmp_path, ci=False)
    assert policy.returncode == 0, policy.stderr
    applied = make_policy(json.loads(policy.stdout), source="abi-policy")
    assert applied.rules["glibc_floor_raised"] == "minor" and applied.gate == frozenset({"symbol_removed"})


@pytest.mark.parametrize("cells", [["not a cell"], [{"id": "c"}], [{"id": 5, "python": [], "platform": {}}]])
def test_matrix_settings_hostile_plan_cells_are_input_errors(tmp_path: Path, cells):
    m = load_matrix(sample_matrix_path())
    plan = json.loads(json.dumps(plan_document(m, expand(m))))
    plan["cells"] = cells
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    proc = _cli("matrix", "settings", "--plan", "plan.json", "--cell", "c", cwd=tmp_path, ci=False)
    assert proc.returncode == 2 and "plan.json" in proc.stderr and "Traceback" not in proc.stderr
