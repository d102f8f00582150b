"""``xcompat run``'s configuration, resolved once before the first stage.

The matrix is read once, its settings resolved once (``xcompat.settings``: defaults <
signed matrix < command line, the latter refused in CI) and handed to every stage; no
stage re-reads the matrix. An input that cannot work is refused here, before anything is
built (``xcompat.pipeline.preflight``).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from pathlib import Path

from xcompat.errors import InputError, UsageError, VerificationError
from xcompat.log import get_logger
from xcompat.pipeline.local import RunConfig
from xcompat.resources import data_dir


def _bundled_sample() -> tuple[Path, Path]:
    examples = data_dir("examples")
    return examples / "sample-ext-v2", examples / "sample-ext"


def _is_project(path: Path) -> bool:
    return (path / "pyproject.toml").is_file() or (path / "setup.py").is_file()


def resolve_config(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> RunConfig:
    """Read the matrix once and resolve the settings once; refuse what cannot run."""
    from xcompat.matrix import load_matrix, read_matrix_bytes
    from xcompat.settings import is_ci, resolve_settings
    from xcompat.settings.project import project_facts

    env = os.environ if env is None else env
    log = get_logger()
    head, release = _bundled_sample()
    demo = args.project is None
    if demo:
        here = " (this folder is a project: `xcompat run .` runs it)" if _is_project(Path.cwd()) else ""
        log.info(f"no PROJECT given: running the bundled sample project{here}")
    project = (head if demo else args.project).resolve()
    if not _is_project(project):
        raise UsageError(f"{project} is not a Python project (no pyproject.toml or setup.py)",
                         hint="pass the folder that holds your pyproject.toml")
    matrix = args.matrix
    if matrix is None:
        # The demo (no PROJECT given) uses the bundled sample's signed matrix; a project
        # always uses its own, never the sample's.
        matrix = release / ".xcompat" / "matrix.yml" if demo else project / ".xcompat" / "matrix.yml"
        if not matrix.is_file():
            raise UsageError(f"{project} has no .xcompat/matrix.yml",
                             hint=f"write a starter matrix with: xcompat matrix init {args.project}")
    matrix = matrix.resolve()
    raw = read_matrix_bytes(matrix)
    loaded = load_matrix(raw, source=str(matrix))
    signature = matrix.with_name(matrix.name + ".sig")
    signed = signature.is_file()
    pinned = _pinned_copy(raw, matrix, getattr(args, "expect_sha256", None))
    if pinned:
        signed = True  # the bytes a CI plan job verified: no signature to check again here
    if not signed:
        if is_ci(env):
            raise VerificationError(
                "the matrix is not signed; CI runs only a signed matrix", file=matrix,
                hint=f"sign it: xcompat matrix sign {matrix} --key ~/.ssh/id_ecdsa",
            )
        log.warning(f"{matrix} is not signed: running it locally; the report says 'unsigned' and CI will refuse it")
    signers = args.allowed_signers or matrix.parent / "allowed_signers"
    signers = signers.resolve()
    if signed and not pinned and not signers.is_file():
        raise InputError("allowed_signers not found", file=signers, hint="pass --allowed-signers PATH")
    overrides = {
        "tests.timeout": args.timeout,
        "tests.isolation": args.isolate,
        "tests.pytest-args": list(args.pytest_args) if getattr(args, "pytest_args", None) else None,
    }
    settings = resolve_settings(loaded, overrides, env=env, signed=signed)
    trust_ref = getattr(args, "trust_ref", None)
    if signed and is_ci(env) and trust_ref is None:
        log.warning("CI run without --trust-ref: the trust list is read from this checkout, which a pull "
                    "request can change; pass --trust-ref with the base branch")
    baseline = args.baseline
    if baseline is None and demo:
        baseline = release
    from xcompat.pipeline.preflight import check_run_inputs

    # Before the first build: an input that cannot work ends the run here, in one line.
    check_run_inputs(project=project, matrix=loaded, matrix_path=matrix, settings=settings,
                     baseline=baseline.resolve() if baseline is not None else None, env=env)
    return RunConfig(
        project=project,
        matrix=matrix,
        allowed_signers=signers if signers.is_file() else None,
        baseline=baseline.resolve() if baseline is not None else None,
        out=args.out,
        backend=args.backend,
        coverage=not args.no_coverage,
        settings=settings,
        facts=project_facts(project),
        signed=signed,
        trust_ref=trust_ref,
    )


def _pinned_copy(raw: bytes, matrix: Path, expected: str | None) -> bool:
    """``--expect-sha256``: the matrix is a CI job's copy of the bytes its plan job verified;
    any other bytes are refused."""
    if not expected:
        return False
    import hashlib

    got = hashlib.sha256(raw).hexdigest()
    if got != expected.lower():
        raise VerificationError(f"the matrix's sha256 is {got}, not the verified {expected}", file=matrix,
                                hint="use the matrix the plan job verified (the plan artifact's matrix.yml)")
    return True
