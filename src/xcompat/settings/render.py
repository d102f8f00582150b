"""What the settings table generates: ``schemas/settings.schema.json`` and the settings key
table of docs/matrix.md (between the markers ``BEGIN`` and ``END``).

    python -m xcompat.settings.render            # exit 1 naming each file that is not current
    python -m xcompat.settings.render --write    # rewrite them from the table

Both are committed; a test checks they are what the table generates, so a row added to
``table.json`` without running ``--write`` fails the suite instead of shipping a stale schema.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from xcompat.settings.resolved import ORIGINS, SETTINGS_VERSION
from xcompat.settings.table import SettingKey, setting_rows

BEGIN = "<!-- settings table: generated from src/xcompat/settings/table.json (python -m xcompat.settings.render --write) -->"
END = "<!-- end of the generated settings table -->"


def settings_schema() -> dict[str, Any]:
    """The JSON Schema of ``settings.json`` and ``xcompat matrix settings --format json``."""
    rows = setting_rows()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://xcompat.dev/schemas/settings.schema.json",
        "title": "xcompat resolved settings (settings.json, xcompat matrix settings --format json)",
        "$comment": "Generated from src/xcompat/settings/table.json: python -m xcompat.settings.render --write",
        "type": "object",
        "required": ["version", "kind", "origin", "matrix_sha256", "signed", "overridden", "settings"],
        "properties": {
            "version": {"const": SETTINGS_VERSION},
            "kind": {"const": "settings"},
            "origin": {"enum": list(ORIGINS)},
            "matrix_sha256": {"type": ["string", "null"], "pattern": "^[0-9a-f]{64}$"},
            "signed": {"type": ["boolean", "null"]},
            "overridden": {"type": "array", "items": {"type": "string"}},
            "settings": {
                "type": "object",
                "additionalProperties": False,
                "required": [row.name for row in rows if not row.optional],
                "properties": {row.name: {"description": row.doc, **row.type.schema()} for row in rows},
            },
            "project": {
                "type": ["object", "null"],
                "properties": {
                    "name": {"type": ["string", "null"]},
                    "uses_torch": {"type": ["boolean", "null"]},
                    "torch_evidence": {"type": "string"},
                },
            },
            "cell": {"type": "object"},
            "stages": {"type": "object"},
        },
    }


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
    return {
        root / "schemas" / "settings.schema.json": schema_text(),
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
