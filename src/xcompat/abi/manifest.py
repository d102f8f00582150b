"""ABI manifests: everything ``abi diff`` compares, for one side, as one object.

A manifest is built from a wheel, a folder of wheels, a single shared object, or read back
from a gzipped snapshot (``xcompat abi snapshot``), so an old release can be stored as a
few hundred kilobytes instead of its wheels.
"""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from typing import Any

from xcompat.abi.binary import LibraryInterface, SlotRecord

MANIFEST_VERSION = 1
SNAPSHOT_SUFFIXES = (".json.gz", ".abi.gz", ".json")


class ManifestError(ValueError):
    pass


class Manifest(SlotRecord):
    """``kind``: "wheel" | "wheels" | "library" | "snapshot". ``python_api``: dotted path ->
    {"kind": ..., "signature": ...}, None when not extracted. ``torch_ops``: "ns::op.overload"
    -> schema string, None when not extracted. ``origin_kind``: for a snapshot, what it was
    taken of ("wheel", "wheels", "library"). ``python_api_wheel``: the wheel the Python API was
    read from (runtime verification imports it); not stored. (Not a dataclass: see
    :class:`~xcompat.abi.binary.SlotRecord`.)"""

    __slots__ = (  # noqa: RUF023 (field order, as repr shows them)
        "source", "kind", "name", "version", "tags", "requires_python", "requires_dist", "libraries",
        "python_api", "torch_ops", "unchecked", "origin_kind", "python_api_wheel",
    )

    def __init__(
        self,
        source: str,
        kind: str,
        name: str | None = None,
        version: str | None = None,
        tags: tuple[str, ...] = (),
        requires_python: str | None = None,
        requires_dist: tuple[str, ...] = (),
        libraries: dict[str, LibraryInterface] | None = None,
        python_api: dict[str, dict[str, Any]] | None = None,
        torch_ops: dict[str, str] | None = None,
        unchecked: list[str] | None = None,
        origin_kind: str | None = None,
        python_api_wheel: str | None = None,
    ) -> None:
        self.source = source
        self.kind = kind
        self.name = name
        self.version = version
        self.tags = tags
        self.requires_python = requires_python
        self.requires_dist = requires_dist
        self.libraries: dict[str, LibraryInterface] = {} if libraries is None else libraries
        self.python_api = python_api
        self.torch_ops = torch_ops
        self.unchecked: list[str] = [] if unchecked is None else unchecked
        self.origin_kind = origin_kind
        self.python_api_wheel = python_api_wheel

    def summary(self) -> dict[str, Any]:
        """The short description that goes into a diff result's ``old`` / ``new``."""
        return {
            "source": self.source,
            "kind": self.kind,
            "name": self.name,
            "version": self.version,
            "tags": list(self.tags),
            "libraries": len(self.libraries),
            "exported_symbols": sum(len(lib.exports) for lib in self.libraries.values()),
        }

    # -- serialisation -------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "version": MANIFEST_VERSION,
            "kind": "abi-snapshot",
            "source": self.source,
            "source_kind": self.origin_kind or self.kind,
            "name": self.name,
            "dist_version": self.version,
            "tags": list(self.tags),
            "requires_python": self.requires_python,
            "requires_dist": list(self.requires_dist),
            "libraries": {key: _lib_to_dict(lib) for key, lib in sorted(self.libraries.items())},
            "python_api": self.python_api,
            "torch_ops": self.torch_ops,
            "unchecked": list(self.unchecked),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, source: str) -> Manifest:
        if not isinstance(data, dict) or data.get("kind") != "abi-snapshot":
            raise ManifestError(f"{source}: not an xcompat ABI snapshot (no \"kind\": \"abi-snapshot\")")
        if data.get("version") != MANIFEST_VERSION:
            raise ManifestError(
                f"{source}: snapshot format version {data.get('version')!r} is not supported "
                f"(this xcompat reads version {MANIFEST_VERSION}); write it again with 'xcompat abi snapshot'"
            )
        try:
            libs = {key: _lib_from_dict(key, lib) for key, lib in data["libraries"].items()}
            return cls(
                source=source,
                kind="snapshot",
                name=data.get("name"),
                version=data.get("dist_version"),
                tags=tuple(data.get("tags", ())),
                requires_python=data.get("requires_python"),
                requires_dist=tuple(data.get("requires_dist", ())),
                libraries=libs,
                python_api=data.get("python_api"),
                torch_ops=data.get("torch_ops"),
                unchecked=list(data.get("unchecked", ())),
                origin_kind=data.get("source_kind"),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ManifestError(f"{source}: malformed ABI snapshot ({type(exc).__name__}: {exc})") from None


def _lib_to_dict(lib: LibraryInterface) -> dict[str, Any]:
    return {
        "path": lib.path,
        "format": lib.format,
        "arch": lib.arch,
        "soname": lib.soname,
        "needed": list(lib.needed),
        "rpath": list(lib.rpath),
        "runpath": list(lib.runpath),
        # [name, type, size] rows, sorted: compact and gzip-friendly
        "exports": [[k, t, s] for k, (t, s) in sorted(lib.exports.items())],
        "imports": [[k, w, v, f] for k, (w, v, f) in sorted(lib.imports.items())],
        "version_defs": list(lib.version_defs),
        "hidden_versions": sorted(lib.hidden_versions),
        "version_needs": {k: list(v) for k, v in sorted(lib.version_needs.items())},
        "cuda_archs": list(lib.cuda_archs) if lib.cuda_archs is not None else None,
        "numpy_target": lib.numpy_target,
        "macos_target": lib.macos_target,
        "python_extension": lib.is_python_extension,
        "debug_info": lib.debug_info,
    }


def _lib_from_dict(key: str, d: dict[str, Any]) -> LibraryInterface:
    return LibraryInterface(
        path=str(d.get("path", key)),
        format=str(d["format"]),
        arch=str(d["arch"]),
        soname=d.get("soname"),
        needed=tuple(d.get("needed", ())),
        rpath=tuple(d.get("rpath", ())),
        runpath=tuple(d.get("runpath", ())),
        exports={str(k): (str(t), int(s)) for k, t, s in d.get("exports", ())},
        imports={str(k): (bool(w), v, f) for k, w, v, f in d.get("imports", ())},
        version_defs=tuple(d.get("version_defs", ())),
        hidden_versions=frozenset(str(k) for k in d.get("hidden_versions", ())),
        version_needs={k: tuple(v) for k, v in d.get("version_needs", {}).items()},
        cuda_archs=tuple(d["cuda_archs"]) if d.get("cuda_archs") is not None else None,
        numpy_target=d.get("numpy_target"),
        macos_target=d.get("macos_target"),
        python_extension=d.get("python_extension"),
        debug_info=d.get("debug_info"),
    )


def write_snapshot(manifest: Manifest, path: str | Path) -> Path:
    """Write ``manifest`` gzipped (or plain JSON when ``path`` ends in ``.json``), atomically."""
    path = Path(path)
    # Not schema-validated here: jsonschema needs seconds for the 75,000 rows of a large
    # library; the tests validate real snapshots against schemas/abi-snapshot.schema.json.
    doc = manifest.to_dict()
    raw = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()
    data = raw if path.suffix == ".json" else gzip.compress(raw, compresslevel=6, mtime=0)
    from xcompat.outputs import write_bytes

    return write_bytes(path, data)


def read_snapshot(path: str | Path) -> Manifest:
    from xcompat.errors import InputError
    from xcompat.jsonio import loads_bounded
    from xcompat.limits import LIMITS, read_bounded

    path = Path(path)
    # Bounded (xcompat.limits): a regular file, and at most json_bytes after gunzip (a gzip bomb).
    try:
        raw = read_bounded(path, what="ABI snapshot", limit=LIMITS.json_bytes)
    except InputError as exc:
        raise ManifestError(str(exc)) from None
    if raw[:2] == b"\x1f\x8b":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(raw)) as fh:
                raw = fh.read(LIMITS.json_bytes + 1)
        except (OSError, EOFError) as exc:
            raise ManifestError(f"{path}: corrupt or truncated gzip data ({exc}); write the snapshot again") from None
        if len(raw) > LIMITS.json_bytes:
            raise ManifestError(f"{path}: inflates to more than {LIMITS.json_bytes} bytes; not a snapshot xcompat wrote")
    try:
        data = loads_bounded(raw, source=path)
    except InputError as exc:
        raise ManifestError(f"{exc}; write the snapshot again") from None
    try:
        return Manifest.from_dict(data, source=str(path))
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise ManifestError(f"{path}: not an ABI snapshot ({type(exc).__name__}: {exc}); write it with xcompat abi snapshot") from None


def looks_like_snapshot(path: Path) -> bool:
    if path.is_dir() or not path.is_file():
        return False
    with open(path, "rb") as fh:
        head = fh.read(2)
    return head == b"\x1f\x8b" or (path.suffix == ".json" and head[:1] == b"{")
