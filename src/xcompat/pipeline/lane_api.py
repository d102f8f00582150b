"""What ``xcompat run --arch`` hands the stages: a lane of another architecture, already open.

The stages never import the emulation package (the two are independent layers): the command
opens the lane (``xcompat.emulation.run_lane``) and the run's configuration carries it as an
object of this shape. With none, every stage runs natively, as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol


class EmulatedLane(Protocol):
    @property
    def name(self) -> str:
        """The architecture, as platform tags spell it: aarch64."""
        ...

    @property
    def python(self) -> str:
        """The root's Python, "3.11": the only Python of the lane's cells."""
        ...

    @property
    def floor(self) -> str | None:
        """The ISA level the tests run at (its QEMU CPU model); None: the feature-rich model."""
        ...

    @property
    def has_torch(self) -> bool:
        """Whether the root's environment has torch (the conformance kernels need it)."""
        ...

    @property
    def torch(self) -> str | None:
        """The torch release the lane installs for the kernels; None: there is none for its arch."""
        ...

    def ensure_torch(self) -> str | None:
        """Install torch in the root's environment when it lacks it (once, from a cached wheel).
        None: it has torch now; else why it cannot."""
        ...

    def feature_rich(self) -> EmulatedLane | None:
        """The same lane at the feature-rich CPU model, for a lane at an ISA floor (None: this
        lane already runs at that model)."""
        ...

    def describe(self) -> dict[str, Any]:
        """The ``emulation`` object of a result: arch, QEMU version, CPU model, floor, root."""
        ...

    def command(self, argv: Sequence[str], *, env: Mapping[str, str], cwd: Path,
                binds: Sequence[Path]) -> list[str]:
        """The host command that runs the Python command line ``argv`` in the root, with this
        xcompat importable there and ``binds`` (and ``cwd``) at their host paths."""
        ...
