"""The dynamic interface of one native library, whatever its object format."""

from __future__ import annotations

from dataclasses import dataclass, field

# ELF e_machine / Mach-O cputype -> the architecture name wheel tags use.
ELF_MACHINES = {3: "i686", 62: "x86_64", 183: "aarch64", 40: "armv7l", 21: "ppc64le", 22: "s390x", 243: "riscv64"}


@dataclass(slots=True)
class LibraryInterface:
    """What a loader and a linker see of one shared object or extension module.

    ``exports`` maps a symbol key (``name`` or ``name@VERSION``) to (type char, size);
    ``imports`` maps an undefined symbol's name to (weak, version, library of the version).
    """

    path: str
    format: str  # "elf" | "macho"
    arch: str
    soname: str | None = None
    needed: tuple[str, ...] = ()
    rpath: tuple[str, ...] = ()
    runpath: tuple[str, ...] = ()
    exports: dict[str, tuple[str, int]] = field(default_factory=dict)
    imports: dict[str, tuple[bool, str | None, str | None]] = field(default_factory=dict)
    version_defs: tuple[str, ...] = ()
    version_needs: dict[str, tuple[str, ...]] = field(default_factory=dict)
    cuda_archs: tuple[str, ...] | None = None
    numpy_target: str | None = None
    macos_target: str | None = None
    unchecked: list[str] = field(default_factory=list)
    # set by the readers; None means "not known yet, look at the exports"
    python_extension: bool | None = None
    debug_info: bool | None = None
    # versioned export keys ("name@VER") that are not the default version of their name
    # (``.symver name,name@VER`` compat aliases, versym hidden bit): only references that ask
    # for VER bind to them
    hidden_versions: frozenset[str] = frozenset()
    # exported data objects (incl. TLS and GNU-unique) -> st_size; filled by the ELF reader
    _objects: dict[str, int] | None = None

    @property
    def object_sizes(self) -> dict[str, int]:
        if self._objects is None:
            self._objects = {k: s for k, (t, s) in self.exports.items() if t in "oOtTu"}
        return self._objects

    @property
    def is_python_extension(self) -> bool:
        if self.python_extension is None:
            self.python_extension = any(k.startswith("PyInit_") for k in self.exports)
        return self.python_extension
