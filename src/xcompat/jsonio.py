"""Versioned JSON outputs: schema validation and writes.

Every machine-readable output of xcompat carries ``"version": N`` and has a schema in
``schemas/``. Writes follow the one output policy of ``xcompat.outputs``: regular files
are written to a temporary file in the same folder and renamed into place, so an
interrupted run never leaves a half-written result; devices and FIFOs are never replaced.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from xcompat.errors import InputError
from xcompat.outputs import write_bytes
from xcompat.resources import schema_path


def load_schema(name: str) -> dict[str, Any]:
    with open(schema_path(name), encoding="utf-8") as fh:
        return json.load(fh)


def validate(name: str, document: Any, *, source: str | None = None) -> None:
    """Validate ``document`` against ``schemas/<name>.schema.json``; raise InputError on the best match."""
    import jsonschema  # heavy: imported only when validating

    schema = load_schema(name)
    cls = jsonschema.validators.validator_for(schema)
    errors = list(cls(schema).iter_errors(document))
    if not errors:
        return
    best = jsonschema.exceptions.best_match(errors)
    path = "$" + "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in best.absolute_path)
    more = f"; {len(errors) - 1} other error(s)" if len(errors) > 1 else ""
    raise InputError(
        f"does not match schema {name}: {path}: {best.message}{more}",
        file=source or f"<{name}>",
    )


def atomic_write_bytes(path: str | Path, data: bytes, *, mode: int | None = None) -> Path:
    """Write ``data`` to ``path`` by xcompat's output policy (``xcompat.outputs``).

    Regular files are replaced atomically (temporary file + fsync + rename in the same
    folder) and keep their mode and owner; new files get ``mode`` (default 0o666) less the
    umask; devices, FIFOs and sockets are written in place, never replaced; ``-`` is
    standard output. Bytes are written as they are: no newline translation.
    """
    return write_bytes(path, data, mode=mode)


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write UTF-8 ``text`` to ``path`` (see ``atomic_write_bytes``)."""
    return write_bytes(path, text.encode("utf-8"))


def dump_json(document: Any) -> str:
    return json.dumps(document, indent=2, sort_keys=False, ensure_ascii=False) + "\n"


def write_json(path: str | Path, document: Any, *, schema: str | None = None) -> Path:
    """Validate (when ``schema`` is given) and atomically write a JSON document."""
    if schema is not None:
        validate(schema, document, source=str(path))
    return atomic_write_text(path, dump_json(document))


def read_json(path: str | Path, *, schema: str | None = None) -> Any:
    """Read a JSON file; malformed or truncated files raise InputError naming file, line and column."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("file not found", file=path) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason})", file=path) from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg}", file=path, line=exc.lineno, column=exc.colno) from None
    if schema is not None:
        validate(schema, document, source=str(path))
    return document
