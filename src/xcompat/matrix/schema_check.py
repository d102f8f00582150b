"""Validate a loaded matrix against ``schemas/matrix.schema.json`` and explain the best error.

The message names the YAML line and column of the offending value, its JSON path, and,
for unknown keys or values outside a fixed set, the closest allowed spelling
("did you mean 'python'?"). Errors are ordered with jsonschema's ``best_match`` first;
the others follow as details.
"""

from __future__ import annotations

import difflib
import json
from functools import cache
from typing import Any

from xcompat.errors import InputError
from xcompat.matrix.yamlload import LoadedYaml, Mark


@cache
def _schema() -> dict[str, Any]:
    from xcompat.resources import schema_path

    with open(schema_path("matrix"), encoding="utf-8") as fh:
        schema: dict[str, Any] = json.load(fh)
    return schema


@cache
def _validator() -> Any:
    import jsonschema

    schema = _schema()
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _fast_valid(data: Any) -> bool:
    from xcompat.matrix.fastschema import FastChecker, Unsupported

    try:
        return FastChecker(_schema()).valid(data)
    except Unsupported:
        return False


def json_path(path: Any) -> str:
    out = "$"
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, str) and part.replace("_", "a").replace("-", "a").isalnum():
            out += f".{part}"
        else:
            out += f"[{json.dumps(part)}]"
    return out


def did_you_mean(word: str, choices: Any) -> str | None:
    words = [c for c in choices if isinstance(c, str)]
    close = difflib.get_close_matches(word, words, n=1, cutoff=0.6)
    if not close:
        lower = {c.lower(): c for c in words}
        if word.lower() in lower:
            close = [lower[word.lower()]]
    return f"did you mean {close[0]!r}?" if close else None


class _Explained:
    def __init__(self, message: str, path: tuple[Any, ...], mark: Mark | None, hint: str | None):
        self.message = message
        self.path = path
        self.mark = mark
        self.hint = hint

    def line(self, source: str | None) -> str:
        where = f"{source or '<matrix>'}:{self.mark.line}:{self.mark.column}" if self.mark else (source or "")
        text = f"{where}: {json_path(self.path)}: {self.message}"
        return text + (f" ({self.hint})" if self.hint else "")


def _allowed_keys(schema: dict[str, Any]) -> list[str]:
    keys = list(schema.get("properties", {}))
    for sub in schema.get("allOf", []):
        if isinstance(sub, dict):
            keys += list(sub.get("properties", {}))
    return keys


def _explain(error: Any, loaded: LoadedYaml) -> _Explained:
    path = tuple(error.absolute_path)
    validator = error.validator
    instance = error.instance
    if validator == "additionalProperties" and isinstance(instance, dict):
        allowed = _allowed_keys(error.schema)
        extra = [k for k in instance if k not in allowed]
        if extra:
            key = extra[0]
            hint = did_you_mean(key, allowed)
            if hint is None and allowed:
                hint = "allowed keys: " + ", ".join(sorted(allowed))
            return _Explained(
                f"unknown key {key!r}", path + (key,), loaded.mark_for(path + (key,), key=True), hint
            )
    mark = loaded.mark_for(path)
    if validator in ("enum", "const"):
        choices = error.validator_value if validator == "enum" else [error.validator_value]
        hint = did_you_mean(instance, choices) if isinstance(instance, str) else None
        if hint is None:
            hint = "expected one of: " + ", ".join(json.dumps(c) for c in choices)
        return _Explained(f"{json.dumps(instance)} is not allowed here", path, mark, hint)
    if validator == "type" and isinstance(instance, (int, float)) and not isinstance(instance, bool):
        expected = error.validator_value
        if expected == "string" or (isinstance(expected, list) and "string" in expected):
            hint = (
                "quote version numbers: YAML reads 3.10 as the number 3.1"
                if isinstance(instance, float)
                else f'quote it: "{instance}"'
            )
            return _Explained(f"expected a string, got the number {instance!r}", path, mark, hint)
    if validator == "type" and isinstance(instance, str) and error.validator_value in ("integer", "number"):
        return _Explained(
            f"expected a number, got the string {json.dumps(instance)}",
            path,
            mark,
            "remove the quotes" if instance.strip().lstrip("-").replace(".", "", 1).isdigit() else None,
        )
    if validator == "required":
        missing = [k for k in error.validator_value if isinstance(instance, dict) and k not in instance]
        if missing:
            return _Explained(f"missing required key {missing[0]!r}", path, mark, None)
    if validator == "oneOf" and error.context:
        # Show the most specific reason of the closest alternative.
        best = min(error.context, key=lambda e: (len(e.absolute_path) * -1, e.validator == "type"))
        inner = _explain(best, loaded)
        return inner
    if validator == "pattern":
        return _Explained(
            f"{json.dumps(instance)} does not have the expected form", path, mark, _pattern_hint(path)
        )
    return _Explained(error.message, path, mark, None)


_PATTERN_HINTS = {
    "python": 'write CPython versions like "3.12" or "3.13t"',
    "repo": 'write the repository as "owner/name"',
    "policy": "use manylinux_X_Y or musllinux_X_Y, e.g. manylinux_2_28",
    "gpu-archs": "CUDA archs look like sm_80, ROCm archs like gfx90a",
    "toolkits": 'write toolkit versions like "12.8" (CUDA) or "6.2" (ROCm)',
    "expires": "write the date as YYYY-MM-DD",
    # the pattern is also an environment variable of every CI job: a line break would start another
    "tag-pattern": 'write the tag pattern on one line, a shell-style glob like "v*"',
}


def _pattern_hint(path: tuple[Any, ...]) -> str | None:
    for part in reversed(path):
        if isinstance(part, str) and part in _PATTERN_HINTS:
            return _PATTERN_HINTS[part]
    return None


def validate_matrix_document(loaded: LoadedYaml) -> None:
    """Raise ``InputError`` naming YAML line, JSON path and a suggestion for the best-matching error.

    Valid documents are recognised by ``fastschema`` without importing ``jsonschema``;
    only an invalid one pays for ``jsonschema`` and its best-match explanation.
    """

    data = loaded.data
    if not isinstance(data, dict):
        kind = "empty" if data is None else type(data).__name__
        raise InputError(
            f"a matrix file must be a YAML mapping, this one is {kind}",
            file=loaded.source,
            line=1,
            column=1,
            hint="start from examples/sample-ext/.xcompat/matrix.yml",
        )
    if _fast_valid(data):
        return
    import jsonschema

    errors = list(_validator().iter_errors(data))
    if not errors:
        return
    best = jsonschema.exceptions.best_match(errors)
    explained = _explain(best, loaded)
    others = [
        _explain(e, loaded) for e in sorted(errors, key=jsonschema.exceptions.relevance) if e is not best
    ]
    details = []
    if others:
        details.append(f"{len(others)} other error{'s' if len(others) > 1 else ''}:")
        details += [o.line(loaded.source) for o in others[:20]]
        if len(others) > 20:
            details.append(f"... and {len(others) - 20} more")
    message = f"{json_path(explained.path)}: {explained.message}"
    raise InputError(
        message,
        file=loaded.source,
        line=explained.mark.line if explained.mark else None,
        column=explained.mark.column if explained.mark else None,
        hint=explained.hint,
        details=details,
    )
