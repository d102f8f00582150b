"""``xcompat matrix sign FILE --key KEY``: bump serial, sign (ssh-keygen -Y sign), write FILE.sig."""

from __future__ import annotations

import argparse


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="matrix file to sign (.xcompat/matrix.yml)")
    parser.add_argument(
        "--key",
        "-k",
        required=True,
        metavar="KEY",
        help="private key file, or KEY.pub when the private half is in ssh-agent or a security key",
    )
    parser.add_argument(
        "--signature", metavar="PATH", help="where to write the signature (default: FILE.sig)"
    )
    bump = parser.add_mutually_exclusive_group()
    bump.add_argument(
        "--no-bump", action="store_true", help="sign without changing serial (re-sign identical content)"
    )
    bump.add_argument(
        "--serial", type=int, metavar="N", help="set serial to N (must be greater than the current one)"
    )
    parser.add_argument(
        "--hash", choices=("sha512", "sha256"), default="sha512", help="message hash (default sha512)"
    )
    parser.add_argument(
        "--method",
        choices=("auto", "ssh-keygen", "python"),
        default="auto",
        help="auto: ssh-keygen when installed, else pure Python (key files only)",
    )


def execute(args: argparse.Namespace) -> int:
    from xcompat.log import get_logger
    from xcompat.signing.sign import sign_matrix

    result = sign_matrix(
        args.file,
        args.key,
        bump=not args.no_bump,
        serial=args.serial,
        signature=args.signature,
        hash_algorithm=args.hash,
        method=args.method,
    )
    log = get_logger()
    if result.serial_after != result.serial_before:
        log.info(f"serial {result.serial_before} -> {result.serial_after}")
    log.success(
        f"signed {result.matrix_path} with {result.key_type} key {result.fingerprint} "
        f"({result.method}); signature: {result.signature_path}"
    )
    return 0
