"""``xcompat matrix verify FILE --allowed-signers PATH``: check the signature before anything runs."""

from __future__ import annotations

import argparse

from xcompat.outputs import OutputFile


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="signed matrix file (.xcompat/matrix.yml)")
    parser.add_argument(
        "--allowed-signers",
        required=True,
        metavar="PATH",
        help="OpenSSH allowed_signers file (read from --trust-ref when given)",
    )
    parser.add_argument("--signature", metavar="PATH", help="armored signature (default: FILE.sig)")
    parser.add_argument(
        "--revoked", metavar="PATH", help="revoked keys: public keys, one a line, or a binary KRL"
    )
    parser.add_argument(
        "--trust-ref",
        metavar="GITREF",
        help="read allowed_signers, revoked keys and the previous matrix from this git ref "
        "(the PR base), and refuse a serial that did not grow",
    )
    parser.add_argument(
        "--repo",
        metavar="OWNER/NAME",
        help="repository the matrix must be bound to (default: $GITHUB_REPOSITORY or $CI_PROJECT_PATH)",
    )
    parser.add_argument("--principal", metavar="NAME", help="require the signer's principals to match NAME")
    parser.add_argument(
        "--cross-check",
        action="store_true",
        help="also run ssh-keygen -Y verify on the same bytes; refuse if it disagrees",
    )
    parser.add_argument(
        "--json", type=OutputFile(), metavar="OUT", help="also write the result as JSON (schemas/verify.schema.json)"
    )
    parser.add_argument(
        "--why", type=OutputFile(), metavar="FILE",
        help="on refusal, write why (one line: the error and its hint) to FILE, for the report of this change",
    )


def execute(args: argparse.Namespace) -> int:
    from xcompat.errors import XcompatError
    from xcompat.log import get_logger
    from xcompat.signing.verify import verify_matrix

    log = get_logger()
    try:
        result = verify_matrix(
            args.file,
            allowed_signers=args.allowed_signers,
            signature=args.signature,
            revoked=args.revoked,
            trust_ref=args.trust_ref,
            repo=args.repo,
            principal=args.principal,
            cross_check=args.cross_check,
        )
    except XcompatError as exc:
        if args.why:
            from xcompat.jsonio import atomic_write_text

            where = f"{exc.location()}: " if exc.file else ""
            text = where + exc.message + (f" ({exc.hint})" if exc.hint else "")
            atomic_write_text(args.why, " ".join(text.split())[:1000] + "\n")
        raise
    for note in result.notes:
        log.warning(note)
    m = result.matrix
    log.success(
        f'Good "{result.namespace}" signature for {result.principal} with {result.key_type} key '
        f"{result.fingerprint}: {result.matrix_path} (repo {m.repo}, serial {m.serial})"
    )
    if result.trust_ref:
        if result.trusted_serial is None:
            log.info(f"trust ref {result.trust_ref} ({result.trust_commit}): no earlier matrix")
        else:
            state = "unchanged" if result.unchanged else f"serial {result.trusted_serial} -> {m.serial}"
            log.info(f"trust ref {result.trust_ref} ({result.trust_commit}): {state}")
    if result.cross_checked:
        log.info("ssh-keygen -Y verify agrees")
    if args.json:
        from xcompat.jsonio import write_json

        write_json(args.json, result.to_dict(), schema="verify")
    log.set_output("matrix-sha256", result.sha256)
    log.set_output("principal", result.principal)
    log.set_output("fingerprint", result.fingerprint)
    log.set_output("serial", str(m.serial))
    return 0
