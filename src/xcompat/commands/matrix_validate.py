"""``xcompat matrix validate FILE...``: YAML syntax, duplicate keys, schema, cross-field rules."""

from __future__ import annotations

import argparse


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="matrix files (.xcompat/matrix.yml)")


def execute(args: argparse.Namespace) -> int:
    from xcompat.errors import XcompatError
    from xcompat.log import get_logger, report_error
    from xcompat.matrix import load_matrix
    from xcompat.matrix.plan import expand

    log = get_logger()
    worst = 0
    for path in args.files:
        try:
            matrix = load_matrix(path)
            cells = expand(matrix)
        except XcompatError as exc:
            report_error(exc)
            worst = max(worst, exc.exit_code)
            continue
        required = sum(1 for c in cells if c.required)
        log.success(
            f"{path}: valid (repo {matrix.repo}, serial {matrix.serial}, "
            f"{len(cells)} cells, {required} required)"
        )
    return worst
