"""``xcompat keys fingerprint KEY.pub...``: the same line ``ssh-keygen -l -f KEY.pub`` prints."""

from __future__ import annotations

import argparse


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("keys", nargs="+", metavar="KEY.pub", help="OpenSSH public key files")


def execute(args: argparse.Namespace) -> int:
    from pathlib import Path

    from xcompat.errors import InputError
    from xcompat.limits import LIMITS, read_bounded_text
    from xcompat.signing.keys import parse_public_key_line
    from xcompat.signing.wire import WireError

    for name in args.keys:
        path = Path(name)
        try:
            text = read_bounded_text(path, what="public key file", limit=LIMITS.trust_file_bytes)
        except InputError as exc:
            if isinstance(exc.__cause__, FileNotFoundError):
                raise InputError("public key file not found", file=name) from None
            if "UTF-8" in exc.message or "folder" in exc.message:
                raise InputError("not an OpenSSH public key file", file=name) from None
            raise
        lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
        if not lines:
            raise InputError("no public key in the file", file=name)
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                key = parse_public_key_line(line, "public key")
            except WireError as exc:
                raise InputError(
                    str(exc),
                    file=name,
                    line=lineno,
                    hint="pass the .pub file (ssh-keygen -y -f KEY > KEY.pub)",
                ) from None
            print(f"{key.bits} {key.fingerprint} {key.comment or 'no comment'} ({key.display_type})")
    return 0
