"""Every command that reads a file, given every kind of malformed file there: a documented exit code,
one error line, no traceback, no hang, nothing half-written.

Commands run in-process through ``xcompat.cli.main`` (an exception escaping it is the traceback a
user would see); each case has its own timeout, so a read that waits forever (a FIFO) fails the
case instead of the run. The table of outcomes is printed with ``-s`` (see docs/trust-boundary.md).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.helpers.action import envelope, plan_document
from tests.helpers.matrix import matrix_text

from xcompat.cli import main

CELL = "py3.12-linux-x86_64-cpu"


def _key_pair() -> tuple[str, bytes]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                serialization.NoEncryption())
    return public.decode(), private


# A real ECDSA P-256 key: the trust list parses, the signature is what fails.
PUBLIC_KEY, PRIVATE_KEY = _key_pair()

# -- malformed contents ---------------------------------------------------------------------

BILLION_LAUGHS = (b'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
                  + b"".join(b"%s: &%s [*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s]\n" % ((bytes([c]),) * 2 + (bytes([c - 1]),) * 9)
                             for c in range(ord("b"), ord("j"))))

CONTENTS: dict[str, bytes] = {
    "empty": b"",
    "binary": bytes(range(256)) * 16,
    "not-utf8": b"\xff\xfe\x00\xc3(",
    "truncated-json": b'{"version": 1, "kind": "test", "cell_id": "c", "status": "pa',
    "deep-json": b"[" * 100_000,
    "long-int": b'{"version": ' + b"9" * 5000 + b"}",
    "nan": b'{"version": 1, "kind": "test", "cell_id": null, "status": "passed", "summary": "x", "n": NaN}',
    "wrong-type": b'["not", "an", "object"]',
    "wrong-kind": b'{"version": 1, "kind": "bogus", "cell_id": null, "status": "passed", "summary": "x"}',
    "version-string": b'{"version": "1", "kind": "coverage", "cell_id": null, "status": "passed", "summary": "x"}',
    "yaml-bomb": BILLION_LAUGHS,
    "deep-yaml": b"a: " + b"[" * 100_000,
}
SPECIAL = ("oversized", "fifo", "dev-zero", "directory", "missing", "dangling-symlink")
KINDS = [*CONTENTS, *SPECIAL]


def plant(path: Path, kind: str) -> None:
    """Put a malformed ``kind`` of file at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or path.is_file():
        path.unlink()
    if kind in CONTENTS:
        path.write_bytes(CONTENTS[kind])
    elif kind == "oversized":
        with open(path, "wb") as fh:  # sparse: no disk is used
            fh.truncate(200 * 1024 * 1024)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        os.symlink("/dev/zero", path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "dangling-symlink":
        os.symlink(path.parent / "nowhere", path)
    elif kind != "missing":
        raise AssertionError(kind)


# -- commands and the file each one reads ---------------------------------------------------

@dataclass(frozen=True)
class Case:
    name: str
    target: str  # the file made malformed, relative to the workspace
    argv: Callable[[Path], list[str]]
    codes: frozenset[int] = frozenset({2})  # documented exit codes for a malformed input
    outputs: tuple[str, ...] = ()  # files that must not exist after a failure
    kinds: tuple[str, ...] = tuple(KINDS)
    optional: bool = False  # the file may be absent: a FIFO, device, folder or dangling link counts as absent

# Known gaps in files this tier does not own: (case, kind) -> what is wrong. Strict: fixing one
# makes its case pass, which fails the run until the entry is removed.
KNOWN = {
}


def workspace(root: Path) -> Path:
    """Well-formed inputs of every kind; each case then spoils one of them."""
    write = lambda rel, doc: (root / rel).parent.mkdir(parents=True, exist_ok=True) or (root / rel).write_text(  # noqa: E731
        doc if isinstance(doc, str) else json.dumps(doc))
    write("matrix.yml", matrix_text())
    write("matrix.yml.sig", "-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n-----END SSH SIGNATURE-----\n")
    write("allowed_signers", f'alice namespaces="xcompat-matrix-v1" {PUBLIC_KEY}\n')
    write("key.pub", f"{PUBLIC_KEY} alice@example.org\n")
    (root / "id_ecdsa").write_bytes(PRIVATE_KEY)
    (root / "id_ecdsa").chmod(0o600)
    write("plan.json", plan_document((CELL, True)))
    write(f"results/{CELL}/test.json", envelope("test", CELL, "passed", "1 passed"))
    write("abi-diff.json", {"version": 1, "required_bump": "none", "findings": []})
    write("coverage.json", {"version": 1, "kind": "coverage"})
    write("cov-cell.json", {"version": 1, "kind": "coverage"})
    write("policy.json", {"rules": {}})
    write("bundle/plan.json", plan_document((CELL, True)))
    write(f"bundle/results/{CELL}/test.json", envelope("test", CELL, "passed", "1 passed"))
    return root


RESULT = f"results/{CELL}/test.json"
# The gate refuses before reading anything without a verified matrix (exit 3); these cases are
# about parsing the evidence, so they use the documented escape hatch.
GATE_UNVERIFIED = ("gate", "--insecure-no-verify")
CASES = [
    Case("matrix validate", "matrix.yml", lambda w: ["matrix", "validate", str(w / "matrix.yml")]),
    Case("matrix plan", "matrix.yml", lambda w: ["matrix", "plan", str(w / "matrix.yml"), "--output", str(w / "out.json")],
         outputs=("out.json",)),
    Case("matrix verify (matrix)", "matrix.yml", lambda w: ["matrix", "verify", str(w / "matrix.yml"), "--allowed-signers",
                                                            str(w / "allowed_signers")], codes=frozenset({2, 3})),
    Case("matrix verify (signature)", "matrix.yml.sig", lambda w: ["matrix", "verify", str(w / "matrix.yml"),
                                                                   "--allowed-signers", str(w / "allowed_signers")],
         codes=frozenset({2, 3})),
    Case("matrix verify (allowed_signers)", "allowed_signers", lambda w: ["matrix", "verify", str(w / "matrix.yml"),
                                                                          "--allowed-signers", str(w / "allowed_signers")],
         codes=frozenset({2, 3})),
    Case("matrix verify (revoked)", "revoked", lambda w: ["matrix", "verify", str(w / "matrix.yml"), "--allowed-signers",
                                                          str(w / "allowed_signers"), "--revoked", str(w / "revoked")],
         codes=frozenset({2, 3})),
    Case("matrix sign (matrix)", "matrix.yml", lambda w: ["matrix", "sign", str(w / "matrix.yml"), "--key",
                                                          str(w / "id_ecdsa"), "--method", "python", "--signature",
                                                          str(w / "new.sig")], outputs=("new.sig",)),
    Case("matrix sign (key)", "id_ecdsa", lambda w: ["matrix", "sign", str(w / "matrix.yml"), "--key", str(w / "id_ecdsa"),
                                                     "--method", "python", "--signature", str(w / "new.sig")],
         outputs=("new.sig",)),
    Case("keys fingerprint", "key.pub", lambda w: ["keys", "fingerprint", str(w / "key.pub")]),
    Case("report (result)", RESULT, lambda w: ["report", str(w / "results"), "--plan", str(w / "plan.json"), "--format",
                                               "json", "--out", str(w / "report.json")], codes=frozenset({1, 2})),
    Case("report (plan)", "plan.json", lambda w: ["report", str(w / "results"), "--plan", str(w / "plan.json"), "--out",
                                                  str(w / "report.md")], outputs=("report.md",)),
    Case("report --from-artifact (result)", f"bundle/results/{CELL}/test.json",
         lambda w: ["report", "--from-artifact", str(w / "bundle"), "--out", str(w / "r.md")], codes=frozenset({1, 2})),
    Case("report --from-artifact (plan)", "bundle/plan.json",
         lambda w: ["report", "--from-artifact", str(w / "bundle"), "--out", str(w / "r.md")], codes=frozenset({1, 2}),
         optional=True),
    Case("gate (plan)", "plan.json", lambda w: [*GATE_UNVERIFIED, "--plan", str(w / "plan.json"), "--results", str(w / "results"),
                                                "--out", str(w / "gate.json")], codes=frozenset({2, 3})),
    Case("gate (result)", RESULT, lambda w: [*GATE_UNVERIFIED, "--plan", str(w / "plan.json"), "--results", str(w / "results"),
                                             "--out", str(w / "gate.json")], codes=frozenset({1, 2, 3})),
    Case("gate --abi", "abi-diff.json", lambda w: [*GATE_UNVERIFIED, "--abi", str(w / "abi-diff.json"), "--out",
                                                   str(w / "gate.json")], codes=frozenset({2, 3})),
    Case("gate --coverage", "coverage.json", lambda w: [*GATE_UNVERIFIED, "--coverage", str(w / "coverage.json"), "--out",
                                                        str(w / "gate.json")], codes=frozenset({2, 3})),
    Case("gate --matrix", "matrix.yml", lambda w: ["gate", "--plan", str(w / "plan.json"), "--results", str(w / "results"),
                                                   "--matrix", str(w / "matrix.yml"), "--allowed-signers",
                                                   str(w / "allowed_signers"), "--out", str(w / "gate.json")],
         codes=frozenset({1, 2, 3})),  # the gate reports an unverifiable matrix as a refused release
    Case("coverage merge", "cov-cell.json", lambda w: ["coverage", "merge", str(w / "cov-cell.json"), "--out-dir",
                                                       str(w / "merged")], outputs=("merged/coverage.json",)),
    Case("coverage merge --matrix", "matrix.yml", lambda w: ["coverage", "merge", str(w / "cov-cell.json"), "--matrix",
                                                             str(w / "matrix.yml"), "--out-dir", str(w / "merged")],
         outputs=("merged/coverage.json",)),
    Case("coverage collect", ".coverage", lambda w: ["coverage", "collect", "--python-data", str(w / ".coverage"),
                                                     "--source-root", str(w), "--out", str(w / "cell.json")],
         outputs=("cell.json",)),
    Case("run --matrix", "matrix.yml", lambda w: ["run", "--matrix", str(w / "matrix.yml"), "--out", str(w / "run-out")],
         outputs=("run-out/report.json",)),
    Case("abi diff (old)", "old.whl", lambda w: ["abi", "diff", str(w / "old.whl"), str(w / "old.whl"), "-o",
                                                 str(w / "abi.json")], outputs=("abi.json",)),
    Case("abi diff (snapshot)", "old.json.gz", lambda w: ["abi", "diff", str(w / "old.json.gz"), str(w / "old.json.gz")]),
    Case("abi diff --policy", "policy.json", lambda w: ["abi", "diff", str(w / "policy.json"), str(w / "policy.json"),
                                                        "--policy", str(w / "policy.json")]),
    Case("abi snapshot", "lib.so", lambda w: ["abi", "snapshot", str(w / "lib.so"), "--output", str(w / "snap.json")],
         outputs=("snap.json",)),
    Case("abi stable", "lib.so", lambda w: ["abi", "stable", str(w / "lib.so")]),
]

OUTCOMES: list[tuple[str, str, int, str]] = []


@pytest.fixture(scope="module", autouse=True)
def _print_table():
    yield
    if OUTCOMES:
        width = max(len(c) for c, *_ in OUTCOMES)
        print("\n" + "\n".join(f"{c:<{width}}  {k:<16}  exit {code}  {line[:110]}" for c, k, code, line in OUTCOMES))


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", CASES, ids=[re.sub(r"[^a-z]+", "-", c.name).strip("-") for c in CASES])
def test_malformed_input(tmp_path: Path, capsys, monkeypatch, request, case: Case, kind: str) -> None:
    if kind not in case.kinds:
        pytest.skip(f"{case.name} does not read {kind}")
    if (case.name, kind) in KNOWN:
        request.applymarker(pytest.mark.xfail(reason=KNOWN[(case.name, kind)], strict=True))
    for var in [v for v in os.environ if v.startswith(("GITHUB_", "GITLAB", "CI_"))] + ["CI"]:
        monkeypatch.delenv(var, raising=False)
    work = workspace(tmp_path)
    plant(work / case.target, kind)
    monkeypatch.chdir(work)
    code = main(case.argv(work))  # an exception escaping main() is the traceback a user would get
    err = capsys.readouterr().err
    line = next((ln for ln in err.splitlines() if ln.startswith(("error", "::error"))), err.strip()[:200])
    OUTCOMES.append((case.name, kind, code, line))
    assert "Traceback" not in err
    codes = case.codes | ({0} if case.optional and kind in SPECIAL else set())
    assert code in codes, f"{case.name} with a {kind} {case.target}: exit {code}, expected {sorted(case.codes)}\n{err}"
    assert line, f"{case.name}: no error line for a {kind} {case.target}"
    for rel in case.outputs:
        assert not (work / rel).exists(), f"{case.name} left {rel} behind after exit {code}"
