"""Bounds on every read of untrusted input, kept as data in one place.

A pull request controls the files CI reads (the matrix, result bundles, wheels) and a forge
controls the HTTP answers; none of them may make xcompat exhaust memory, recurse until the
interpreter gives up, or wait forever. Each limit below is documented in
docs/trust-boundary.md ("Limits"), and each is enforced where the input is read:

- ``read_bounded`` for files named on the command line (matrix, signature, trust lists,
  JSON results): regular files only, opened without blocking, at most ``limit`` bytes;
- ``xcompat.jsonio.read_json``: size, nesting depth and integer length of JSON documents;
- the signing glob matcher, the matrix cell cap, the archive and wheel readers
  (``xcompat.archives``) and the HTTP client.

Exceeding a limit is an input error (exit 2) naming the file and the limit, never a
traceback, a hang or a partial result.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from xcompat.errors import InputError

MiB = 1024 * 1024


@dataclass(frozen=True, kw_only=True)
class InputLimits:
    # files named on the command line
    matrix_bytes: int = 1 * MiB  # .xcompat/matrix.yml
    signature_bytes: int = 64 * 1024  # matrix.yml.sig (an armored SSHSIG is < 2 KiB)
    trust_file_bytes: int = 1 * MiB  # allowed_signers, revoked_keys (a KRL included)
    json_bytes: int = 64 * MiB  # one JSON result, plan, bundle or coverage file
    json_depth: int = 200  # nesting of arrays and objects in one JSON document
    json_int_digits: int = 4300  # digits of one JSON integer (CPython's int-string default)
    result_files: int = 10_000  # JSON files read from the result folders of one report or gate
    result_total_bytes: int = 1024 * MiB  # their sizes added up
    # the matrix and its expansion
    matrix_cells: int = 4096  # cells one matrix may expand to (GitLab allows 200 per parallel:matrix)
    matrix_expansion: int = 65536  # cells of the cross product before exclude rules remove some
    glob_pattern_chars: int = 1024  # one principal or namespace pattern in allowed_signers
    # wheels, and every other archive read or unpacked (sdists, exported sources): xcompat.archives
    wheel_members: int = 100_000  # entries in one wheel or archive
    wheel_member_bytes: int = 2048 * MiB  # uncompressed size of one member that is read
    wheel_total_bytes: int = 8192 * MiB  # uncompressed size of all members read from one wheel or archive
    wheel_compression_ratio: int = 1000  # uncompressed / compressed of one member or tar stream (zip bombs)
    wheel_metadata_bytes: int = 16 * MiB  # one METADATA or WHEEL member, read into memory
    # test processes (xcompat test): the tests' own output and crash text
    test_output_bytes: int = 256 * 1024  # read back per test or per process (the end is kept)
    # the forge (GitHub / GitLab HTTP answers)
    http_response_bytes: int = 32 * MiB  # one response body
    http_pages: int = 50  # pages of one paginated list (RetryPolicy.max_pages)


LIMITS = InputLimits()


def read_bounded(path: str | Path, *, what: str, limit: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them.

    The file is opened with ``O_NONBLOCK`` so that a FIFO cannot make the open wait for a
    writer, and anything that is not a regular file (a FIFO, ``/dev/zero``, a socket, a
    folder) is refused before a byte is read. Missing files raise ``InputError`` whose
    ``__cause__`` is the ``FileNotFoundError``.
    """
    path = Path(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError as exc:
        raise InputError(f"{what} not found", file=path) from exc
    except IsADirectoryError:
        raise InputError(f"{what} is a folder, expected a file", file=path) from None
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror or exc}", file=path) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise InputError(f"{what} is a folder, expected a file", file=path)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"{what} is not a regular file (a device, FIFO or socket)", file=path,
                             hint="pass the path of an ordinary file")
        if info.st_size > limit:
            raise InputError(f"{what} is {info.st_size} bytes, over the limit of {limit}", file=path,
                             hint="see docs/trust-boundary.md, Limits")
        chunks: list[bytes] = []
        size = 0
        while True:
            try:
                chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            except OSError as exc:
                if exc.errno in (errno.EAGAIN, errno.EWOULDBLOCK):
                    break
                raise InputError(f"cannot read {what}: {exc.strerror or exc}", file=path) from None
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise InputError(f"{what} grew past the limit of {limit} bytes while being read", file=path)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_bounded_text(path: str | Path, *, what: str, limit: int) -> str:
    """``read_bounded`` decoded as UTF-8; undecodable bytes are an input error."""
    data = read_bounded(path, what=what, limit=limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} is not UTF-8 text ({exc.reason} at byte {exc.start})", file=path) from None
