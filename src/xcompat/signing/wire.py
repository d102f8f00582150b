"""SSH wire encoding (RFC 4251 §5): strict reader and writer.

Hand-written because no maintained library exposes it; it is a few lines and every
bound is checked, so a truncated or padded blob fails with a message instead of an
``IndexError`` or a silent partial read.
"""

from __future__ import annotations

import struct


class WireError(ValueError):
    """Malformed SSH wire data; the message says what was expected."""


class Reader:
    def __init__(self, data: bytes, what: str = "data"):
        self.data = memoryview(bytes(data))
        self.pos = 0
        self.what = what

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def take(self, n: int, field: str) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise WireError(f"{self.what} is truncated while reading {field}")
        out = bytes(self.data[self.pos : self.pos + n])
        self.pos += n
        return out

    def uint32(self, field: str) -> int:
        return int(struct.unpack(">I", self.take(4, field))[0])

    def byte(self, field: str) -> int:
        return self.take(1, field)[0]

    def string(self, field: str) -> bytes:
        length = self.uint32(f"length of {field}")
        if length > self.remaining():
            raise WireError(f"{self.what}: {field} claims {length} bytes but only {self.remaining()} remain")
        return self.take(length, field)

    def text(self, field: str) -> str:
        raw = self.string(field)
        try:
            return raw.decode("ascii")
        except UnicodeDecodeError:
            raise WireError(f"{self.what}: {field} is not ASCII text") from None

    def mpint(self, field: str) -> int:
        raw = self.string(field)
        if not raw:
            return 0
        if raw[0] & 0x80:
            raise WireError(f"{self.what}: {field} is negative")
        if len(raw) > 1 and raw[0] == 0 and not raw[1] & 0x80:
            raise WireError(f"{self.what}: {field} has a needless leading zero byte (not canonical)")
        if raw[0] == 0 and len(raw) == 1:
            raise WireError(f"{self.what}: {field} encodes zero with a zero byte (not canonical)")
        return int.from_bytes(raw, "big")

    def end(self) -> None:
        if self.remaining():
            raise WireError(f"{self.what} has {self.remaining()} unexpected trailing byte(s)")


def string(value: bytes | str) -> bytes:
    if isinstance(value, str):
        value = value.encode("ascii")
    return struct.pack(">I", len(value)) + value


def uint32(value: int) -> bytes:
    return struct.pack(">I", value)


def mpint(value: int) -> bytes:
    if value == 0:
        return string(b"")
    raw = value.to_bytes((value.bit_length() + 7) // 8, "big")
    if raw[0] & 0x80:
        raw = b"\x00" + raw
    return string(raw)
