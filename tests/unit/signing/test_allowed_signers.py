from __future__ import annotations

import datetime as dt

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from xcompat.errors import InputError
from xcompat.signing.allowed_signers import (
    find_signer,
    match_pattern_list,
    parse_allowed_signers,
    parse_revoked,
    parse_time,
)
from xcompat.signing.keys import parse_public_key_line

UTC = dt.timezone.utc
NOW = dt.datetime(2030, 6, 1, 12, 0, tzinfo=UTC)


def _line() -> str:
    key = ec.generate_private_key(ec.SECP256R1()).public_key()
    return key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()


A, B = _line(), _line()


def test_parses_principals_options_and_comments():
    text = f"""
# trust list
alice@example.org,bob@example.org namespaces="xcompat-matrix-v1,git",valid-after="20300101Z",valid-before="20301231235959Z" {A} a comment
"carol@example.org" {B}
*@ci.example.org cert-authority {B}
"""
    entries = parse_allowed_signers(text, source="as")
    assert [e.line for e in entries] == [3, 4, 5]
    first = entries[0]
    assert first.principals == "alice@example.org,bob@example.org"
    assert first.namespaces == "xcompat-matrix-v1,git"
    assert first.valid_after == dt.datetime(2030, 1, 1, tzinfo=UTC)
    assert first.valid_before == dt.datetime(2030, 12, 31, 23, 59, 59, tzinfo=UTC)
    assert entries[1].principals == "carol@example.org" and entries[1].namespaces is None
    assert entries[2].cert_authority


@pytest.mark.parametrize(
    "line, message",
    [
        ("alice", "expected principals, options and a key"),
        (f'alice nmespaces="x" {A}', "unknown option 'nmespaces'"),
        (f'alice namespaces="x",namespaces="y" {A}', "given twice"),
        (f'alice valid-before="2030-01-01" {A}', "not YYYYMMDD"),
        (f"alice namespaces {A}", "needs a value"),
        ("alice ecdsa-sha2-nistp256 AAAA!!", "not valid base64"),
        ('alice "unterminated ' + A, "unterminated quote"),
        (f'alice namespaces="x";valid-before="20300101Z" {A}', "expected ','"),
    ],
)
def test_malformed_lines_name_their_line(line, message):
    with pytest.raises(InputError) as info:
        parse_allowed_signers(f"# header\n{line}\n", source="allowed_signers")
    assert message in info.value.message
    assert (info.value.file, info.value.line) == ("allowed_signers", 2)


def test_pattern_lists_follow_openssh():
    assert match_pattern_list("xcompat-matrix-v1", "xcompat-*")
    assert match_pattern_list("xcompat-matrix-v1", "git,xcompat-matrix-v?")
    assert not match_pattern_list("xcompat-matrix-v1", "git,file")
    assert not match_pattern_list("xcompat-matrix-v1", "*,!xcompat-*")
    # Brackets are literal (unlike fnmatch).
    assert not match_pattern_list("ab", "a[b]") and match_pattern_list("a[b]", "a[b]")


def test_time_parsing_utc_and_local():
    assert parse_time("20300102").tzinfo is not None  # local time, like OpenSSH
    assert parse_time("203001021314Z") == dt.datetime(2030, 1, 2, 13, 14, tzinfo=UTC)
    with pytest.raises(ValueError):
        parse_time("2030")


def test_find_signer_reasons():
    key = parse_public_key_line(A)
    entries = parse_allowed_signers(
        f'old@x namespaces="xcompat-matrix-v1",valid-before="20300101Z" {A}\n'
        f'git@x namespaces="git" {A}\n'
        f'later@x valid-after="20310101Z" {A}\n'
    )
    miss = find_signer(entries, key, namespace="xcompat-matrix-v1", now=NOW)
    assert miss.signer is None
    assert "line 1 (old@x) expired" in miss.reason
    assert "line 2 (git@x) does not allow namespace" in miss.reason
    assert "line 3 (later@x) is not valid before" in miss.reason
    # The same key is fine before its expiry.
    hit = find_signer(entries, key, namespace="xcompat-matrix-v1", now=dt.datetime(2029, 1, 1, tzinfo=UTC))
    assert hit.signer is not None and hit.signer.principals == "old@x"
    # A stranger key has no line at all.
    assert find_signer(entries, parse_public_key_line(B), namespace="x", now=NOW).reason is None


def test_revoked_list_and_errors():
    revoked = parse_revoked(f"# revoked\n{B} lost laptop\n".encode())
    assert revoked.is_revoked(parse_public_key_line(B))
    assert not revoked.is_revoked(parse_public_key_line(A))
    with pytest.raises(InputError) as info:
        parse_revoked(b"\n\nnot-a-key\n", source="revoked")
    assert info.value.line == 3
    with pytest.raises(InputError, match="neither public keys"):
        parse_revoked(b"\xff\xfe\x00")
