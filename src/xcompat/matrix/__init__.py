"""The test matrix: loading, validation and the typed, frozen view every stage reads.

Public API::

    from xcompat.matrix import load_matrix, Matrix
    m = load_matrix(".xcompat/matrix.yml")          # or bytes, with source= for messages
    m.repo, m.serial, m.expires, m.pythons
    m.platforms            # tuple[PlatformSpec]: name, archs, policy, deployment_target, labels(arch)
    m.backends             # tuple[BackendSpec]: name, required, toolkits, gpu_archs, labels(platform, arch, fallback)
    m.backend("cuda")      # BackendSpec | None
    m.frameworks           # Mapping[name, tuple[version, ...]]
    m.abi                  # AbiPolicy: baseline, gating (tuple | None), bumps (Mapping kind -> bump)
    m.coverage             # CoverageThresholds: overall, diff (float percent | None)
    m.gate                 # GateSettings: tag_pattern, required_backends
    m.tests                # TestSettings: kernels ("all" | tuple), pytest_paths, pytest_args, isolation, timeout

and ``xcompat.matrix.plan`` for expanding it into cells. Only safe YAML loading is used;
duplicate keys, aliases and unknown keys are refused with file, line and column.
"""

from __future__ import annotations

from pathlib import Path

from xcompat.errors import InputError
from xcompat.limits import LIMITS, read_bounded
from xcompat.matrix.config import (
    AbiPolicy,
    BackendSpec,
    CellRule,
    CoverageThresholds,
    GateSettings,
    IncludeCell,
    Matrix,
    PlatformSpec,
    TestSettings,
)

__all__ = [
    "AbiPolicy",
    "BackendSpec",
    "CellRule",
    "CoverageThresholds",
    "GateSettings",
    "IncludeCell",
    "Matrix",
    "PlatformSpec",
    "TestSettings",
    "load_matrix",
    "read_matrix_bytes",
]

# A matrix is a short hand-written file; anything this large is not one.
MAX_MATRIX_BYTES = LIMITS.matrix_bytes


def read_matrix_bytes(path: str | Path) -> bytes:
    """Read a matrix file's bytes, with a clear ``InputError`` when it is missing or too large.

    Only regular files are read (a FIFO or ``/dev/zero`` is refused, never waited on).
    """
    try:
        return read_bounded(path, what="matrix file", limit=MAX_MATRIX_BYTES)
    except InputError as exc:
        if isinstance(exc.__cause__, FileNotFoundError):
            raise InputError("matrix file not found", file=path, hint="pass the path of .xcompat/matrix.yml") from None
        raise


def load_matrix(path_or_bytes: str | Path | bytes, *, source: str | None = None) -> Matrix:
    """Load, validate and freeze a matrix.

    ``path_or_bytes`` is a file path or the file's exact bytes (e.g. the bytes a signature
    was just verified over). ``source`` names the file in messages (defaults to the path).
    Raises ``InputError`` (exit code 2) naming file, line and column for YAML errors,
    duplicate keys, schema errors (with the JSON path and a "did you mean") and
    cross-field errors.
    """
    from xcompat.matrix.build import build_matrix
    from xcompat.matrix.schema_check import validate_matrix_document
    from xcompat.matrix.yamlload import load_yaml

    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        raw = bytes(path_or_bytes)
        source = source or "<matrix>"
        if len(raw) > MAX_MATRIX_BYTES:
            raise InputError(f"matrix is larger than {MAX_MATRIX_BYTES} bytes", file=source)
    else:
        raw = read_matrix_bytes(path_or_bytes)
        source = source or str(path_or_bytes)
    loaded = load_yaml(raw, source=source)
    validate_matrix_document(loaded)
    return build_matrix(loaded, raw)
