"""The shared objects a run's test processes mapped when they ended, from its test result.

``xcompat test`` records them on Linux (``mapped_libraries`` of the test result: what every
test process inherited from the warm parent, and each distinct set some of them added). Each
test process is one process: two copies of a runtime count only when one of them held both.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from xcompat.errors import InputError

# Distinct shared objects taken from one test result (a suite that loads more is refused).
MAX_PATHS = 50_000


@dataclass(frozen=True)
class TestMaps:
    processes: int  # test processes whose maps were read
    unread: int  # over the size limit
    isolation: str
    views: tuple[frozenset[str], ...]  # what each kind of test process held at its end

    __test__ = False  # not a pytest test class

    @property
    def paths(self) -> frozenset[str]:
        return frozenset().union(*self.views)

    def describe(self) -> str:
        unread = f"; {self.unread} over the size limit, not read" if self.unread else ""
        if self.isolation == "none":
            return f"the test process at its end (isolation none){unread}"
        many = self.processes != 1
        return (f"{self.processes} test process{'es' if many else ''} at {'their' if many else 'its'} end "
                f"(isolation {self.isolation}){unread}")


def read_test_maps(path: Path) -> TestMaps | str:
    """The test processes' libraries recorded in the test result ``path``, or why there are none
    to read (a malformed result is an ``InputError`` naming it)."""
    from xcompat.jsonio import read_json

    document = read_json(path, schema="test-result")  # bounded, and checked against its schema
    mapped = document.get("mapped_libraries")
    if not isinstance(mapped, dict):
        return f"{path.name} has no mapped_libraries (a system without /proc, or an older xcompat wrote it)"
    processes = int(mapped["processes"])
    if processes == 0:
        return f"{path.name}: no test process was read at its end (each crashed, was killed or ran no test)"
    common = frozenset(mapped["common"])
    # common alone is a view too (a process that added nothing); it lies inside every other one
    views = (common, *(common | frozenset(extra) for extra in mapped["added"]))
    result = TestMaps(processes, int(mapped["unread"]), str(document.get("isolation")), views)
    if len(result.paths) > MAX_PATHS:
        raise InputError(f"the test processes mapped over {MAX_PATHS} shared objects", file=str(path),
                         hint="run the test stage again; a suite this large is not read")
    return result
