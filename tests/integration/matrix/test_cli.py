"""The real CLI in a subprocess: exit codes, one-line errors, outputs validated against their schemas."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from tests.helpers.matrix import example_files, matrix_text, sample_matrix_path, ssh_keygen

from xcompat.resources import schema_path

SAMPLE_DIR = sample_matrix_path().parent


def xcompat(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GITLAB_", "CI"))}
    base.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "xcompat", *args],
        capture_output=True,
        text=True,
        env=base,
        cwd=cwd,
        timeout=120,
        check=False,
    )


def schema(name: str) -> jsonschema.Validator:
    return jsonschema.Draft202012Validator(
        json.loads(schema_path(name).read_text()), format_checker=jsonschema.FormatChecker()
    )


def test_validate_good_and_bad_files():
    ok = xcompat("matrix", "validate", str(sample_matrix_path()), *map(str, example_files("positive")))
    assert ok.returncode == 0, ok.stderr
    assert "valid (repo xcompat-demo/sample-ext, serial" in ok.stderr
    bad = [str(p) for p in example_files("negative")]
    proc = xcompat("matrix", "validate", str(sample_matrix_path()), *bad)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error: ")]
    assert len(errors) == len(bad)  # one line per bad file, each naming its file
    assert all(any(b in ln for ln in errors) for b in bad)


def test_validate_in_github_actions_annotates_the_line(tmp_path):
    path = next(p for p in example_files("negative") if p.name == "unknown-top-key.yml")
    proc = xcompat("matrix", "validate", str(path), env={"GITHUB_ACTIONS": "true"})
    assert proc.returncode == 2
    assert f"::error file={path},line=6,col=1::" in proc.stderr.replace("%3A", ":").replace("%2C", ",")


def test_verify_the_bundled_sample_and_write_json(tmp_path):
    out = tmp_path / "verify.json"
    gh_out = tmp_path / "github_output"
    proc = xcompat(
        "matrix",
        "verify",
        str(sample_matrix_path()),
        "--allowed-signers",
        str(SAMPLE_DIR / "allowed_signers"),
        "--json",
        str(out),
        env={
            "GITHUB_ACTIONS": "true",
            "GITHUB_OUTPUT": str(gh_out),
            "GITHUB_REPOSITORY": "xcompat-demo/sample-ext",
        },
    )
    assert proc.returncode == 0, proc.stderr
    assert 'Good "xcompat-matrix-v1" signature for demo@xcompat-demo' in proc.stderr
    doc = json.loads(out.read_text())
    schema("verify").validate(doc)
    assert doc["repo_checked"] == "xcompat-demo/sample-ext" and doc["notes"] == []
    outputs = gh_out.read_text()
    assert "matrix-sha256<<" in outputs and doc["sha256"] in outputs


def test_verify_refusal_exit_code_3_without_traceback(tmp_path):
    proc = xcompat(
        "matrix",
        "verify",
        str(sample_matrix_path()),
        "--allowed-signers",
        str(SAMPLE_DIR / "allowed_signers"),
        "--repo",
        "someone/else",
        "--json",
        str(tmp_path / "v.json"),
    )
    assert proc.returncode == 3
    assert "bound to repository 'xcompat-demo/sample-ext', but this is 'someone/else'" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "v.json").exists()


def test_verify_missing_allowed_signers_is_exit_2(tmp_path):
    proc = xcompat("matrix", "verify", str(sample_matrix_path()), "--allowed-signers", str(tmp_path / "nope"))
    assert proc.returncode == 2 and "allowed_signers not found" in proc.stderr


@pytest.mark.parametrize("fmt", ["json", "github", "gitlab", "cibuildwheel"])
def test_plan_formats_validate_and_reach_github_output(tmp_path, fmt):
    out = tmp_path / "plan.json"
    gh_out = tmp_path / "github_output"
    proc = xcompat(
        "matrix",
        "plan",
        str(sample_matrix_path()),
        "--format",
        fmt,
        "--output",
        str(out),
        env={"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(gh_out)},
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    schema("plan").validate(doc)
    outputs = gh_out.read_text()
    name, rest = outputs.split("<<", 1)
    assert name == "plan"
    delim, body = rest.split("\n", 1)
    assert json.loads(body.split("\n" + delim + "\n", 1)[0]) == doc
    if fmt == "github":
        assert "\nmatrix<<" in outputs


def test_plan_to_stdout_filtered_for_one_runner():
    proc = xcompat(
        "matrix",
        "plan",
        str(sample_matrix_path()),
        "--platform",
        "linux",
        "--arch",
        "aarch64",
        "--backend",
        "cpu",
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["counts"]["cells"] == 8
    assert {(c["platform"], c["arch"], c["backend"]) for c in doc["cells"]} == {("linux", "aarch64", "cpu")}


def test_plan_expect_sha256_guards_against_a_swapped_file():
    proc = xcompat("matrix", "plan", str(sample_matrix_path()), "--expect-sha256", "0" * 64)
    assert proc.returncode == 3 and "matrix changed since it was verified" in proc.stderr


def test_plan_warns_when_github_limit_is_exceeded(tmp_path):
    m = tmp_path / "big.yml"
    m.write_text(
        matrix_text(extra="").replace(
            'frameworks:\n  torch: ["2.13"]',
            "frameworks:\n  torch: [" + ", ".join(f'"2.{i}"' for i in range(130)) + "]",
        )
    )
    proc = xcompat("matrix", "plan", str(m), "--format", "github", "--output", str(tmp_path / "p.json"))
    assert proc.returncode == 0
    assert "260 jobs exceed the github limit of 256" in proc.stderr


@pytest.mark.skipif(ssh_keygen() is None, reason="ssh-keygen is not installed")
def test_sign_then_verify_through_the_cli(tmp_path):
    shutil.copy(sample_matrix_path(), tmp_path / "matrix.yml")
    key = tmp_path / "k"
    subprocess.run(
        [ssh_keygen(), "-q", "-t", "ecdsa", "-b", "256", "-N", "", "-C", "me@example.org", "-f", str(key)],
        check=True,
    )
    (tmp_path / "allowed").write_text(
        "me@example.org " + " ".join((tmp_path / "k.pub").read_text().split()[:2]) + "\n"
    )
    before = (tmp_path / "matrix.yml").read_text()
    proc = xcompat("matrix", "sign", str(tmp_path / "matrix.yml"), "--key", str(key))
    assert proc.returncode == 0, proc.stderr
    after = (tmp_path / "matrix.yml").read_text()
    serial = int(next(ln for ln in before.splitlines() if ln.startswith("serial:")).split()[1])
    assert after == before.replace(f"serial: {serial}\n", f"serial: {serial + 1}\n")
    proc = xcompat(
        "matrix", "verify", str(tmp_path / "matrix.yml"), "--allowed-signers", str(tmp_path / "allowed")
    )
    assert proc.returncode == 0, proc.stderr
    assert f"serial {serial + 1}" in proc.stderr
    # keys fingerprint prints exactly what ssh-keygen -l prints.
    ours = xcompat("keys", "fingerprint", str(tmp_path / "k.pub"))
    theirs = subprocess.run(
        [ssh_keygen(), "-l", "-f", str(tmp_path / "k.pub")], capture_output=True, text=True, check=True
    )
    assert ours.returncode == 0 and ours.stdout == theirs.stdout


@pytest.mark.skipif(ssh_keygen() is None, reason="ssh-keygen is not installed")
@pytest.mark.parametrize("key_type", ["ecdsa-384", "ed25519", "rsa"])
def test_keys_fingerprint_matches_ssh_keygen_for_other_types(tmp_path, key_type):
    kt, _, bits = key_type.partition("-")
    cmd = [ssh_keygen(), "-q", "-t", kt, "-N", "", "-f", str(tmp_path / "k")]
    if bits:
        cmd += ["-b", bits]
    elif kt == "rsa":
        cmd += ["-b", "2048"]
    subprocess.run(cmd, check=True)
    ours = xcompat("keys", "fingerprint", str(tmp_path / "k.pub"))
    theirs = subprocess.run(
        [ssh_keygen(), "-l", "-f", str(tmp_path / "k.pub")], capture_output=True, text=True, check=True
    )
    assert ours.stdout == theirs.stdout


def test_keys_fingerprint_bad_input(tmp_path):
    (tmp_path / "bad.pub").write_text("ecdsa-sha2-nistp256 not-base64!\n")
    proc = xcompat("keys", "fingerprint", str(tmp_path / "bad.pub"))
    assert proc.returncode == 2 and "bad.pub:1: public key is not valid base64" in proc.stderr
