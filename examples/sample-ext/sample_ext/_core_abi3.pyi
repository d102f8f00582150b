from collections.abc import Sequence

ABI_VERSION: int
LIMITED_API: int

def scale(values: Sequence[float], factor: float, /) -> list[float]: ...
def checksum(data: bytes | bytearray | memoryview, /) -> int: ...
