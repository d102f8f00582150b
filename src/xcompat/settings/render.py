"""What the settings table generates: ``schemas/settings.schema.json``, the ``settings`` of
``schemas/plan.schema.json`` (``$defs.settings``), the ``tests``, ``abi``, ``coverage`` and
``gate`` sections of ``schemas/matrix.schema.json``, and the settings key table of
docs/matrix.md (between the markers ``BEGIN`` and ``END``). The rest of the plan and matrix
schemas is written by hand; only the generated parts of their text are replaced.

    python -m xcompat.settings.render            # exit 1 naming each file that is not current
    python -m xcompat.settings.render --write    # rewrite them from the table

All are committed; a test checks they are what the table generates, so a row added to
``table.json`` without running ``--write`` fails the suite instead of shipping a stale schema.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from xcompat.settings.schema_forms import matrix_section_schemas, plan_settings_schema, settings_schema
from xcompat.settings.table import SettingKey, setting_rows

BEGIN = "<!-- settings table: generated from src/xcompat/settings/table.json (python -m xcompat.settings.render --write) -->"
END = "<!-- end of the generated settings table -->"


def _dump(value: Any, indent: int = 0) -> str:
    """JSON with an object or list on one line where it fits in 100 columns."""
    flat = json.dumps(value, ensure_ascii=False)
    if not isinstance(value, (dict, list)) or not value or indent + len(flat) <= 100:
        return flat
    pad = " " * (indent + 2)
    if isinstance(value, dict):
        items = [f"{pad}{json.dumps(k, ensure_ascii=False)}: {_dump(v, indent + 2)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    return "[\n" + ",\n".join(pad + _dump(v, indent + 2) for v in value) + "\n" + " " * indent + "]"


def schema_text() -> str:
    return _dump(settings_schema()) + "\n"


def _indented(value: Any, indent: int) -> str:
    """``json.dumps(indent=2)`` as it reads at column ``indent`` (the matrix schema's layout)."""
    return json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n" + " " * indent)


_SPACE = re.compile(r"\s*")


def _value_span(text: str, path: Sequence[str]) -> tuple[int, int]:
    """Where the JSON value at the object keys ``path`` starts and ends in ``text``."""
    decoder = json.JSONDecoder()

    def skip(at: int) -> int:
        match = _SPACE.match(text, at)
        return match.end() if match else at

    at = skip(0)
    for key in path:
        if text[at] != "{":
            raise ValueError(f"no object holds {key!r}")
        at = skip(at + 1)
        while True:
            name, at = decoder.raw_decode(text, at)
            at = skip(skip(at) + 1)  # past the colon
            if name == key:
                break
            at = skip(decoder.raw_decode(text, at)[1])
            if text[at] != ",":
                raise ValueError(f"no key {key!r}")
            at = skip(at + 1)
    return at, decoder.raw_decode(text, at)[1]


def with_value(text: str, path: Sequence[str], value: Any, dump: Callable[[Any, int], str]) -> str:
    """``text`` (a JSON document) with the value at ``path`` replaced by ``value``, written by
    ``dump`` at the column of its key; every other byte is kept."""
    start, end = _value_span(text, path)
    column = start - text.rfind("\n", 0, start) - 1
    key_column = column - len(json.dumps(path[-1], ensure_ascii=False)) - 2
    return text[:start] + dump(value, key_column) + text[end:]


def plan_schema_text(text: str) -> str:
    """``text`` (schemas/plan.schema.json) with the generated ``$defs.settings``."""
    return with_value(text, ("$defs", "settings"), plan_settings_schema(), _dump)


def matrix_schema_text(text: str) -> str:
    """``text`` (schemas/matrix.schema.json) with the generated settings sections."""
    for name, section in matrix_section_schemas().items():
        text = with_value(text, ("properties", name), section, _indented)
    return text


def _flow(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in value.items()) + "}"
    return str(value)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _docs_row(row: SettingKey) -> str:
    default = row.unset if row.default is None else f"`{_flow(row.default)}`"
    cells = [f"`{row.name}`", row.type.docs(), default, row.doc]
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def docs_table() -> str:
    """The settings key table of docs/matrix.md, markers included."""
    lines = [BEGIN, "| key | type | default | meaning |", "| --- | --- | --- | --- |"]
    lines += [_docs_row(row) for row in setting_rows()]
    return "\n".join([*lines, END]) + "\n"


def with_docs_table(text: str) -> str:
    """``text`` (docs/matrix.md) with the generated table between its markers."""
    start = text.index(BEGIN)
    end = text.index(END, start) + len(END) + 1
    return text[:start] + docs_table() + text[end:]


def generated_files(root: Path) -> dict[Path, str]:
    """Each generated file under the checkout ``root`` and the text it should have."""
    docs = root / "docs" / "matrix.md"
    plan = root / "schemas" / "plan.schema.json"
    matrix = root / "schemas" / "matrix.schema.json"
    return {
        root / "schemas" / "settings.schema.json": schema_text(),
        plan: plan_schema_text(plan.read_text(encoding="utf-8")),
        matrix: matrix_schema_text(matrix.read_text(encoding="utf-8")),
        docs: with_docs_table(docs.read_text(encoding="utf-8")),
    }


def main(argv: list[str] | None = None) -> int:
    from xcompat.log import get_logger
    from xcompat.resources import repo_root

    parser = argparse.ArgumentParser(prog="python -m xcompat.settings.render", description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite the generated files from the table")
    args = parser.parse_args(argv)
    log = get_logger()
    root = repo_root()
    if root is None:
        log.error("not a source checkout of xcompat (no schemas/ beside src/): nothing to generate")
        return 2
    wanted = generated_files(root)
    stale = [path for path, text in wanted.items() if path.read_text(encoding="utf-8") != text]
    for path in stale:
        if args.write:
            path.write_text(wanted[path], encoding="utf-8")
            log.info(f"wrote {path.relative_to(root)}")
        else:
            log.error(f"{path.relative_to(root)} is not what the settings table generates; "
                      "run: python -m xcompat.settings.render --write")
    return 1 if stale and not args.write else 0


if __name__ == "__main__":
    sys.exit(main())
