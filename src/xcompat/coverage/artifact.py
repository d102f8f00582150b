"""Read per-cell coverage artifacts (``coverage collect`` output) for merging.

A malformed or truncated artifact raises :class:`InputError` naming the file and, when
it can be read, the cell; the merge records it and carries on with the others.

The envelope and the shape of each file record are checked here by hand rather than by
``jsonschema``: a 64-cell merge of a 2,000-file project holds tens of millions of line
numbers, which a schema validator walks one by one (minutes), while these checks cost a
few C-level passes. ``coverage collect`` validates the full schema when it writes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from xcompat.coverage.languages import LANGUAGES
from xcompat.errors import InputError
from xcompat.jsonio import loads_bounded
from xcompat.limits import LIMITS, read_bounded

SUPPORTED_VERSIONS = (1,)


def guess_cell_id(path: Path) -> str:
    """A cell id for messages when the artifact itself cannot be read."""
    name = path.name
    for suffix in (".json", ".coverage"):
        name = name.removesuffix(suffix)
    return name


def read_cell_artifact(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    # Bounded like every untrusted read (xcompat.limits): regular files only, size, depth.
    try:
        raw = read_bounded(path, what="coverage artifact", limit=LIMITS.json_bytes)
    except InputError as exc:
        if isinstance(exc.__cause__, FileNotFoundError):
            raise InputError("coverage artifact not found", file=path) from None
        raise
    try:
        document = loads_bounded(raw, source=path)
    except InputError as exc:
        raise InputError(
            f"coverage artifact is truncated or not valid JSON: {exc.message}",
            file=path,
            line=exc.line,
            column=exc.column,
            hint="re-run xcompat coverage collect in that cell",
        ) from None
    if not isinstance(document, dict):
        raise InputError("coverage artifact is not a JSON object", file=path)
    if document.get("kind") != "coverage":
        raise InputError(f"not a coverage artifact (kind={document.get('kind')!r})", file=path)
    if document.get("version") not in SUPPORTED_VERSIONS:
        raise InputError(
            f"coverage artifact version {document.get('version')!r} is not supported "
            f"(this xcompat reads {', '.join(map(str, SUPPORTED_VERSIONS))})",
            file=path,
            hint="collect and merge with the same xcompat version",
        )
    if "totals" in document and isinstance(document.get("files"), list):
        raise InputError(
            "this is a merged report (coverage.json), not a cell artifact; leave it out of the inputs",
            file=path,
        )
    cell = document.get("cell_id")
    if cell is not None and not isinstance(cell, str):
        raise InputError("$.cell_id must be a string or null", file=path)
    files = document.get("files")
    if not isinstance(files, dict):
        raise InputError("$.files must be an object of path -> line data", file=path)
    for name, record in files.items():
        where = f"$.files[{name!r}]"
        if not isinstance(record, dict):
            raise InputError(f"{where} must be an object", file=path)
        lines, hits = record.get("lines"), record.get("hits")
        if not isinstance(lines, list) or not isinstance(hits, list) or len(lines) != len(hits):
            raise InputError(f"{where}: 'lines' and 'hits' must be lists of equal length", file=path)
        if lines and not (type(lines[0]) is int and type(lines[-1]) is int and lines[0] <= lines[-1]):
            raise InputError(f"{where}.lines must be ascending line numbers", file=path)
        if record.get("language") not in LANGUAGES:
            raise InputError(
                f"{where}.language {record.get('language')!r} is not one of {', '.join(LANGUAGES)}", file=path
            )
    return document
