"""The kernel build cache: the key whose hash names a build folder, and the manifest a finished
build leaves beside its library. A later load that finds a manifest for its key loads the
cached library without compiling anything."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from xcompat import cxxruntime

MANIFEST = "manifest.json"


@dataclass(frozen=True, kw_only=True)
class BuildKey:
    """Everything that changes the compiled library; its hash names the cache folder."""

    torch: str
    torch_cuda: str | None
    torch_hip: str | None
    python_abi: str
    machine: str
    compiler: str
    nvcc: str | None
    cflags: tuple[str, ...]
    cuda_cflags: tuple[str, ...]
    device_archs: tuple[str, ...]
    arch_source: str | None  # "matrix", "TORCH_CUDA_ARCH_LIST", "PYTORCH_ROCM_ARCH", "device" or None
    cuda_home: str | None
    sources_sha256: str
    with_device: bool

    def digest(self) -> str:
        text = json.dumps(asdict(self), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:20]


def read_manifest(build_dir: Path, key: BuildKey, compiler: str) -> Path | None:
    """The cached library of ``key`` in ``build_dir``, or None when there is no usable one.
    ``compiler`` is named in the refusal of a cached library that carries its own C++ runtime."""
    try:
        manifest = json.loads((build_dir / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    expected = json.loads(json.dumps(asdict(key)))  # tuples read back as lists
    if not isinstance(manifest, dict) or manifest.get("key") != expected:
        return None
    library = build_dir / str(manifest.get("library", ""))
    if not library.is_file():
        return None
    if manifest.get("cxx_runtime") != "shared":
        # Built before that check was recorded: read the library once (xcompat.cxxruntime);
        # one carrying its own C++ runtime is never loaded.
        finding = cxxruntime.carried_runtime(library)
        if finding is not None:
            raise cxxruntime.refusal(f"the cached kernel library in {build_dir} cannot be loaded", finding, compiler)
        write_manifest(build_dir, library, key)
    return library


def write_manifest(build_dir: Path, library: Path, key: BuildKey) -> None:
    """The manifest of a finished build whose library needs the shared C++ runtime."""
    from xcompat.jsonio import atomic_write_text

    atomic_write_text(
        build_dir / MANIFEST,
        json.dumps({"version": 1, "library": library.name, "key": asdict(key), "cxx_runtime": "shared"}, indent=2)
        + "\n",
    )
