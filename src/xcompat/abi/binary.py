"""The dynamic interface of one native library, whatever its object format."""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, KeysView, Mapping
from typing import Any

# ELF e_machine / Mach-O cputype -> the architecture name wheel tags use.
ELF_MACHINES = {3: "i686", 62: "x86_64", 183: "aarch64", 40: "armv7l", 21: "ppc64le", 22: "s390x", 243: "riscv64"}


class SlotRecord:
    """Equality and repr from ``__slots__``, for the mutable records of the ABI readers.

    The records of the ``abi diff`` path are not dataclasses on purpose: importing
    ``dataclasses`` (it pulls in ``inspect``, ``ast``, ``dis``) and building ten classes with
    it (each compiles its methods with ``exec``) cost about 25 ms, a twentieth of a whole
    diff of libtorch_cpu.so. Frozen records are ``typing.NamedTuple`` classes; the two
    mutable ones use this."""

    __slots__: tuple[str, ...] = ()
    __hash__ = None  # type: ignore[assignment]  # mutable

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, n) for n in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__) + ")"


# Symbol types whose size is part of the interface: data objects (a consumer's copy relocation
# or TLS block is sized by it), GNU-unique objects and TLS.
SIZED_TYPES = "oOtTu"


class Exports(Mapping[str, tuple[str, int]]):
    """Exported symbols as the ELF reader keeps them: key -> (type char, size), held as two
    dicts, ``kinds`` (every export's type char) and ``sizes`` (data objects only; every other
    export reads as size 0).

    A function's ``st_size`` is the length of its code: it changes with every rebuild and no
    consumer depends on it, so it is not kept. Not building a (type, size) tuple per export
    made reading libtorch_cpu.so's 75,000 exports 10% faster and 12 MB smaller (median of 41
    rounds, alternating, separate processes). ``keys()`` is the dict's own view, so set
    operations between two libraries' keys stay in C."""

    __slots__ = ("kinds", "sizes")

    def __init__(self, kinds: dict[str, str], sizes: dict[str, int]) -> None:
        self.kinds = kinds
        self.sizes = sizes

    def __getitem__(self, key: str) -> tuple[str, int]:
        return self.kinds[key], self.sizes.get(key, 0)

    def __iter__(self) -> Iterator[str]:
        return iter(self.kinds)

    def __len__(self) -> int:
        return len(self.kinds)

    def __contains__(self, key: object) -> bool:
        return key in self.kinds

    def get(self, key: str, default: Any = None) -> Any:  # no KeyError raised and caught per miss
        kind = self.kinds.get(key)
        return default if kind is None else (kind, self.sizes.get(key, 0))

    def keys(self) -> KeysView[str]:
        return self.kinds.keys()

    def items(self) -> ItemsView[str, tuple[str, int]]:
        return _ExportItems(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Exports):
            return self.kinds == other.kinds and self.sizes == other.sizes
        return Mapping.__eq__(self, other)

    __hash__ = None  # type: ignore[assignment]  # mutable, like the dicts it wraps

    def __repr__(self) -> str:
        return f"Exports({dict(self.items())!r})"

    def __reduce__(self) -> tuple[type[Exports], tuple[dict[str, str], dict[str, int]]]:
        return (Exports, (self.kinds, self.sizes))


class _ExportItems(ItemsView[str, tuple[str, int]]):
    """Iterates the two dicts directly instead of looking every key up again."""

    _mapping: Exports

    def __iter__(self) -> Iterator[tuple[str, tuple[str, int]]]:
        sizes = self._mapping.sizes
        for key, kind in self._mapping.kinds.items():
            yield key, (kind, sizes.get(key, 0))


class LibraryInterface(SlotRecord):
    """What a loader and a linker see of one shared object or extension module.

    ``exports`` maps a symbol key (``name`` or ``name@VERSION``) to (type char, size): a dict,
    or an :class:`Exports` from the ELF reader (sizes of data objects only);
    ``imports`` maps an undefined symbol's name to (weak, version, library of the version).
    ``python_extension`` is set by the readers; None means "not known yet, look at the
    exports". ``hidden_versions``: versioned export keys ("name@VER") that are not the default
    version of their name (``.symver name,name@VER`` compat aliases, versym hidden bit): only
    references that ask for VER bind to them. ``_objects``: exported data objects (incl. TLS
    and GNU-unique) -> st_size, filled by the ELF reader.
    """

    __slots__ = (  # noqa: RUF023 (field order, as repr shows them)
        "path", "format", "arch", "soname", "needed", "rpath", "runpath", "exports", "imports",
        "version_defs", "version_needs", "cuda_archs", "numpy_target", "macos_target", "unchecked",
        "python_extension", "debug_info", "hidden_versions", "_objects",
    )

    def __init__(
        self,
        path: str,
        format: str,  # "elf" | "macho"
        arch: str,
        soname: str | None = None,
        needed: tuple[str, ...] = (),
        rpath: tuple[str, ...] = (),
        runpath: tuple[str, ...] = (),
        exports: Mapping[str, tuple[str, int]] | None = None,
        imports: dict[str, tuple[bool, str | None, str | None]] | None = None,
        version_defs: tuple[str, ...] = (),
        version_needs: dict[str, tuple[str, ...]] | None = None,
        cuda_archs: tuple[str, ...] | None = None,
        numpy_target: str | None = None,
        macos_target: str | None = None,
        unchecked: list[str] | None = None,
        python_extension: bool | None = None,
        debug_info: bool | None = None,
        hidden_versions: frozenset[str] = frozenset(),
        _objects: dict[str, int] | None = None,
    ) -> None:
        self.path = path
        self.format = format
        self.arch = arch
        self.soname = soname
        self.needed = needed
        self.rpath = rpath
        self.runpath = runpath
        self.exports: Mapping[str, tuple[str, int]] = {} if exports is None else exports
        self.imports: dict[str, tuple[bool, str | None, str | None]] = {} if imports is None else imports
        self.version_defs = version_defs
        self.version_needs: dict[str, tuple[str, ...]] = {} if version_needs is None else version_needs
        self.cuda_archs = cuda_archs
        self.numpy_target = numpy_target
        self.macos_target = macos_target
        self.unchecked: list[str] = [] if unchecked is None else unchecked
        self.python_extension = python_extension
        self.debug_info = debug_info
        self.hidden_versions = hidden_versions
        self._objects = _objects

    @property
    def object_sizes(self) -> dict[str, int]:
        if self._objects is None:
            self._objects = {k: s for k, (t, s) in self.exports.items() if t in SIZED_TYPES}
        return self._objects

    @property
    def is_python_extension(self) -> bool:
        if self.python_extension is None:
            self.python_extension = any(k.startswith("PyInit_") for k in self.exports)
        return self.python_extension
