"""Versioned JSON outputs: schema validation and writes.

Every machine-readable output of xcompat carries ``"version": N`` and has a schema in
``schemas/``. Writes follow the one output policy of ``xcompat.outputs``: regular files
are written to a temporary file in the same folder and renamed into place, so an
interrupted run never leaves a half-written result; devices and FIFOs are never replaced.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from xcompat.errors import InputError
from xcompat.outputs import write_bytes
from xcompat.resources import schema_path


def load_schema(name: str) -> dict[str, Any]:
    with open(schema_path(name), encoding="utf-8") as fh:
        schema: dict[str, Any] = json.load(fh)
    return schema


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


# json's C encoder runs only without ``indent``; the indenting one is pure Python and costs
# more than a whole ABI diff of libtorch_cpu.so on its 1,000-finding result. dump_json indents
# objects and puts each list item on a line of its own, written by the C encoder.
_compact = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": ")).encode


def _key(key: Any) -> str:
    if isinstance(key, str):
        return _compact(key)
    one = _compact({key: None})  # json's own rule for int, float, bool and None keys
    return one[1 : one.rindex(": null}")]


def _layout(value: Any, depth: int, out: list[str]) -> None:
    pad = "\n" + "  " * (depth + 1)
    if isinstance(value, dict) and value:
        sep = "{"
        for k, v in value.items():
            out.append(f"{sep}{pad}{_key(k)}: ")
            _layout(v, depth + 1, out)
            sep = ","
        out.append("\n" + "  " * depth + "}")
    elif isinstance(value, (list, tuple)) and value:
        out.append("[" + pad + f",{pad}".join(map(_compact, value)) + "\n" + "  " * depth + "]")
    else:
        out.append(_compact(value))


def dump_json(document: Any) -> str:
    """``document`` as JSON text: objects indented by two spaces, one list item per line."""
    out: list[str] = []
    _layout(document, 0, out)
    out.append("\n")
    return "".join(out)


def write_json(path: str | Path, document: Any, *, schema: str | None = None) -> Path:
    """Validate (when ``schema`` is given) and atomically write a JSON document."""
    if schema is not None:
        validate(schema, document, source=str(path))
    return atomic_write_text(path, dump_json(document))


def read_json(path: str | Path, *, schema: str | None = None) -> Any:
    """Read a JSON file; malformed, truncated or oversized files raise InputError naming file, line and column.

    The read is bounded (``xcompat.limits``): regular files only, at most ``json_bytes``,
    nesting at most ``json_depth``, integers of at most ``json_int_digits`` digits, and no
    ``NaN``/``Infinity`` (not JSON, and a NaN compares false with every threshold).
    """
    from xcompat.limits import LIMITS, read_bounded_text

    path = Path(path)
    text = read_bounded_text(path, what="JSON file", limit=LIMITS.json_bytes)
    document = loads_bounded(text, source=path)
    if schema is not None:
        validate(schema, document, source=str(path))
    return document


def loads_bounded(text: str | bytes, *, source: str | Path) -> Any:
    """``json.loads`` for untrusted text, within the depth and number limits of ``xcompat.limits``."""
    from xcompat.limits import LIMITS

    def parse_constant(token: str) -> Any:
        raise InputError(f"{token} is not valid JSON", file=source, hint="write numbers as finite decimals")

    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", file=source) from None
    if len(text) > LIMITS.json_bytes:
        raise InputError(f"JSON text of {len(text)} characters is over the limit of {LIMITS.json_bytes}", file=source)
    try:
        # Integers longer than the interpreter's int-string limit (4300 digits, the default of
        # LIMITS.json_int_digits) raise ValueError below; an overflowing float becomes inf and is
        # caught by the walk after parsing.
        document = json.loads(text, parse_constant=parse_constant)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg}", file=source, line=exc.lineno, column=exc.colno) from None
    except RecursionError:
        raise InputError(f"JSON nested deeper than the limit of {LIMITS.json_depth} levels", file=source) from None
    except ValueError as exc:  # an integer string beyond the interpreter's own limit
        if "integer string conversion" in str(exc):
            raise InputError(f"an integer is longer than the limit of {LIMITS.json_int_digits} digits",
                             file=source) from None
        raise InputError(f"invalid JSON: {exc}", file=source) from None
    problem = _out_of_bounds(document, LIMITS.json_depth, LIMITS.json_int_digits)
    if problem:
        raise InputError(problem, file=source)
    return document


def _out_of_bounds(document: Any, depth_limit: int, digit_limit: int) -> str | None:
    """Why ``document`` breaks a limit (nesting, integer length, non-finite number), else None.

    Iterative, so a deep document cannot exhaust the interpreter's recursion limit here.
    Integer length is left to the parser when the interpreter's own int-string limit is at
    least as strict (CPython 3.10.7+ and 3.11: 4300 digits by default).
    """
    import sys

    interpreter_limit = getattr(sys, "get_int_max_str_digits", lambda: 0)()
    biggest = 10**digit_limit if not 0 < interpreter_limit <= digit_limit else None
    stack: list[tuple[Any, int]] = [(document, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > depth_limit:
            return f"JSON nested deeper than the limit of {depth_limit} levels"
        for value in node.values() if isinstance(node, dict) else node if isinstance(node, list) else (node,):
            kind = type(value)
            if kind is dict or kind is list:
                stack.append((value, depth + 1))
            elif kind is float:
                if not math.isfinite(value):
                    return "a number is out of range (it overflows to infinity)"
            elif kind is int and biggest is not None and not -biggest < value < biggest:
                return f"an integer is longer than the limit of {digit_limit} digits"
    return None
