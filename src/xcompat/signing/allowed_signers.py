"""OpenSSH ``allowed_signers`` and revoked-keys files.

``allowed_signers`` lines follow ssh-keygen(1) "ALLOWED SIGNERS"::

    principals [options] keytype base64-key [comment]

Options (comma-separated, case-insensitive): ``namespaces="pattern-list"``,
``valid-after="YYYYMMDD[HHMM[SS]][Z]"``, ``valid-before=...`` and ``cert-authority``.
Times without ``Z`` are local time, as in OpenSSH; write ``Z``. Validity is always
checked against the current clock (or the ``now`` a caller passes in tests), never a
time taken from git. ``cert-authority`` lines only vouch for certificates, which xcompat
does not accept, so they never match a plain key.

A revoked-keys file is one public key per line (``#`` comments allowed), or an OpenSSH
binary KRL, which is checked through ``ssh-keygen -Q``.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass
from pathlib import Path

from xcompat.errors import InputError
from xcompat.limits import LIMITS, read_bounded_text
from xcompat.signing.keys import PublicKey, parse_public_key_line
from xcompat.signing.wire import WireError

KRL_MAGIC = b"SSHKRL\n\0"


@dataclass(frozen=True)
class AllowedSigner:
    principals: str
    key: PublicKey
    namespaces: str | None = None
    valid_after: _dt.datetime | None = None
    valid_before: _dt.datetime | None = None
    cert_authority: bool = False
    line: int = 0


def match_pattern(text: str, pattern: str) -> bool:
    """OpenSSH ``match_pattern``: ``*`` and ``?`` wildcards, everything else literal.

    Matched without a regular expression: a backtracking regex for ``*a*a*a*...b`` takes
    exponential time, and the patterns come from a trust list. This walks text and pattern
    once, returning to the last ``*`` only, so it takes at most len(text) * len(pattern)
    steps; patterns longer than ``LIMITS.glob_pattern_chars`` are refused when parsed.
    """
    t = p = 0
    star = -1  # index in pattern just after the last '*'
    resume = 0  # text index that star is currently absorbing up to
    while t < len(text):
        if p < len(pattern) and pattern[p] != "*" and (pattern[p] == "?" or pattern[p] == text[t]):
            t += 1
            p += 1
        elif p < len(pattern) and pattern[p] == "*":
            star = p + 1
            resume = t
            p += 1
        elif star >= 0:
            resume += 1
            t = resume
            p = star
        else:
            return False
    while p < len(pattern) and pattern[p] == "*":
        p += 1
    return p == len(pattern)


def match_pattern_list(text: str, patterns: str) -> bool:
    """OpenSSH ``match_pattern_list``: comma list; a matching ``!pattern`` vetoes."""
    matched = False
    for pat in patterns.split(","):
        pat = pat.strip()
        if not pat:
            continue
        if pat.startswith("!"):
            if match_pattern(text, pat[1:]):
                return False
        elif match_pattern(text, pat):
            matched = True
    return matched


def parse_time(value: str) -> _dt.datetime:
    """``YYYYMMDD[HHMM[SS]][Z]`` -> aware datetime (local time without ``Z``, as OpenSSH)."""
    utc = value.endswith(("Z", "z"))
    digits = value[:-1] if utc else value
    if not digits.isdigit() or len(digits) not in (8, 12, 14):
        raise ValueError(f"time {value!r} is not YYYYMMDD[HHMM[SS]][Z]")
    fmt = {8: "%Y%m%d", 12: "%Y%m%d%H%M", 14: "%Y%m%d%H%M%S"}[len(digits)]
    naive = _dt.datetime.strptime(digits, fmt)
    if utc:
        return naive.replace(tzinfo=_dt.timezone.utc)
    return naive.astimezone()  # local time zone, like OpenSSH


def _split_token(text: str) -> tuple[str, str]:
    """First whitespace-delimited token, honouring double quotes; returns (token, rest)."""
    text = text.lstrip()
    i, quoted = 0, False
    while i < len(text):
        ch = text[i]
        if ch == '"':
            quoted = not quoted
        elif ch in " \t" and not quoted:
            break
        i += 1
    if quoted:
        raise ValueError("unterminated quote")
    return text[:i], text[i:].lstrip()


def _parse_options(text: str) -> dict[str, str | None]:
    options: dict[str, str | None] = {}
    i = 0
    while i < len(text):
        m = re.match(r'([A-Za-z-]+)(?:="((?:[^"\\]|\\.)*)"|=([^,"\s]*))?', text[i:])
        if not m or not m.group(0):
            raise ValueError(f"cannot parse options near {text[i : i + 20]!r}")
        name = m.group(1).lower()
        value = m.group(2) if m.group(2) is not None else m.group(3)
        if name in options:
            raise ValueError(f"option {name!r} given twice")
        options[name] = value
        i += m.end()
        if i < len(text):
            if text[i] != ",":
                raise ValueError(f"expected ',' between options, got {text[i]!r}")
            i += 1
    return options


_KNOWN_OPTIONS = {"namespaces", "valid-after", "valid-before", "cert-authority"}


def parse_allowed_signers(text: str, *, source: str = "allowed_signers") -> list[AllowedSigner]:
    """Parse an allowed_signers file; any malformed line is an ``InputError`` naming its line."""
    entries: list[AllowedSigner] = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            principals, rest = _split_token(line)
            principals = principals.strip('"')
            if not rest:
                raise ValueError("expected principals, options and a key")
            options: dict[str, str | None] = {}
            first, after = _split_token(rest)
            if not (first.startswith(("ssh-", "ecdsa-", "sk-")) or first.endswith("@openssh.com")):
                options = _parse_options(first)
                rest = after
            unknown = sorted(set(options) - _KNOWN_OPTIONS)
            if unknown:
                raise ValueError(f"unknown option {unknown[0]!r}")
            for what, patterns in (("principals", principals), ("namespaces", options.get("namespaces") or "")):
                if len(patterns) > LIMITS.glob_pattern_chars:
                    raise ValueError(f"{what} pattern list is longer than {LIMITS.glob_pattern_chars} characters")
            key = parse_public_key_line(rest, "key")
            for name in ("namespaces", "valid-after", "valid-before"):
                if name in options and options[name] is None:
                    raise ValueError(f"option {name!r} needs a value")
            after_text, before_text = options.get("valid-after"), options.get("valid-before")
            entries.append(
                AllowedSigner(
                    principals=principals,
                    key=key,
                    namespaces=options.get("namespaces"),
                    valid_after=parse_time(after_text) if after_text else None,
                    valid_before=parse_time(before_text) if before_text else None,
                    cert_authority="cert-authority" in options,
                    line=lineno,
                )
            )
        except (ValueError, WireError) as exc:
            raise InputError(
                f"bad allowed_signers line: {exc}",
                file=source,
                line=lineno,
                hint='format: principals [namespaces="...",valid-before="YYYYMMDDZ"] keytype base64',
            ) from None
    return entries


@dataclass(frozen=True)
class SignerMatch:
    """The outcome of looking a key up in allowed_signers."""

    signer: AllowedSigner | None
    reason: str | None  # why no line accepted the key (None when one did)


def find_signer(
    entries: list[AllowedSigner], key: PublicKey, *, namespace: str, now: _dt.datetime
) -> SignerMatch:
    """The first line that names ``key`` (byte-exact), allows ``namespace`` and is valid at ``now``."""
    reasons: list[str] = []
    for entry in entries:
        if entry.key.blob != key.blob:
            continue
        where = f"line {entry.line} ({entry.principals})"
        if entry.cert_authority:
            reasons.append(f"{where} is a cert-authority entry, which only vouches for certificates")
            continue
        if entry.namespaces is not None and not match_pattern_list(namespace, entry.namespaces):
            reasons.append(
                f'{where} does not allow namespace {namespace!r} (namespaces="{entry.namespaces}")'
            )
            continue
        if entry.valid_after is not None and now < entry.valid_after:
            reasons.append(f"{where} is not valid before {entry.valid_after.isoformat()}")
            continue
        if entry.valid_before is not None and now > entry.valid_before:
            reasons.append(f"{where} expired at {entry.valid_before.isoformat()}")
            continue
        return SignerMatch(entry, None)
    return SignerMatch(None, "; ".join(reasons) if reasons else None)


@dataclass(frozen=True)
class RevokedKeys:
    """Plain revoked public keys, or the bytes of a binary KRL (checked by ssh-keygen)."""

    blobs: frozenset[bytes]
    krl: bytes | None = None
    source: str = "revoked_keys"

    def is_revoked(self, key: PublicKey) -> bool:
        if key.blob in self.blobs:
            return True
        if self.krl is not None:
            from xcompat.signing.ssh_keygen import key_revoked_in_krl

            return key_revoked_in_krl(self.krl, key)
        return False


def parse_revoked(data: bytes, *, source: str = "revoked_keys") -> RevokedKeys:
    if data.startswith(KRL_MAGIC):
        return RevokedKeys(frozenset(), krl=data, source=source)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(
            "revoked-keys file is neither public keys (text) nor an OpenSSH KRL", file=source
        ) from None
    blobs = set()
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            blobs.add(parse_public_key_line(line, "revoked key").blob)
        except WireError as exc:
            raise InputError(f"bad revoked-keys line: {exc}", file=source, line=lineno) from None
    return RevokedKeys(frozenset(blobs), source=source)


def read_text_file(path: str | Path, what: str) -> str:
    """A trust file's text: a regular file of at most ``LIMITS.trust_file_bytes``, UTF-8."""
    return read_bounded_text(path, what=what, limit=LIMITS.trust_file_bytes)
