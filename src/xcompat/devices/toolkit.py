"""Find the CUDA toolkit a build will use, and check it is complete before building.

A toolkit is usable when its root holds ``bin/nvcc``, ``include/cuda_runtime.h`` and a
library folder with the CUDA runtime (``libcudart.so`` or, as the pip wheels ship it, only
``libcudart.so.<major>``). Two layouts are known:

* ``system``: the CUDA installer's tree (``/usr/local/cuda-13.0``): ``lib64/`` (or
  ``targets/<arch>-linux/lib``) with ``libcudart.so``.
* ``pip``: NVIDIA's wheels (``cuda-toolkit[nvcc,cccl,cudart]``) unpack everything into
  ``site-packages/nvidia/cu13``: ``lib/`` (no ``lib64``) with only ``libcudart.so.13``.

Candidates are tried in this order, each rejection kept with its reason:

1. ``CUDA_HOME``, then ``CUDA_PATH``;
2. the ``nvcc`` on ``PATH``, resolved to its real folder: nvcc's own ``--dryrun`` prints
   the folder it runs from (``_HERE_``), which also sees through wrapper scripts such as
   ``/usr/local/bin/nvcc`` that only ``exec`` the real compiler;
3. ``nvidia/cu<major>`` in each ``site-packages`` folder (the pip layout);
4. ``/usr/local/cuda``.

Nothing here imports torch or initialises CUDA; the environment is passed in.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Layout = Literal["system", "pip"]
DEFAULT_ROOT = Path("/usr/local/cuda")
PIP_MAJORS = ("13", "12")
_CUDART_VERSIONED = re.compile(r"^libcudart\.so\.(\d+)(\.[\d.]+)?$")
_NVCC_RELEASE = re.compile(r"release (\d+)\.(\d+)")


@dataclass(frozen=True, kw_only=True)
class CudaToolkit:
    """A validated toolkit root."""

    root: Path
    nvcc: Path
    include_dir: Path
    lib_dir: Path
    cudart: Path  # the shared runtime the extension links against
    layout: Layout
    source: str  # how it was found, for reports and errors
    version: str | None = None  # nvcc's release, "13.0"

    @property
    def cudart_link_flag(self) -> str:
        """``-lcudart`` where the unversioned name exists, else ``-l:libcudart.so.13``: the
        linker takes the versioned file directly, no symlink needed."""
        return "-lcudart" if self.cudart.name == "libcudart.so" else f"-l:{self.cudart.name}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "root": str(self.root),
            "nvcc": str(self.nvcc),
            "include_dir": str(self.include_dir),
            "lib_dir": str(self.lib_dir),
            "cudart": str(self.cudart),
            "layout": self.layout,
            "source": self.source,
            "version": self.version,
        }


@dataclass(frozen=True, kw_only=True)
class ToolkitSearch:
    """The first usable toolkit (or none) and every candidate rejected on the way."""

    toolkit: CudaToolkit | None
    rejected: tuple[str, ...] = field(default=())

    def require(self, what: str = "build the CUDA kernels") -> CudaToolkit:
        if self.toolkit is not None:
            return self.toolkit
        from xcompat.errors import UnavailableError

        tried = "; ".join(self.rejected) if self.rejected else "no nvcc, CUDA_HOME, nvidia/cu13 or /usr/local/cuda"
        raise UnavailableError(
            f"no complete CUDA toolkit to {what}: {tried}",
            hint="set CUDA_HOME to a toolkit with bin/nvcc, include/cuda_runtime.h and lib64/ (or lib/) with "
            "libcudart, or pip install 'cuda-toolkit[nvcc,cccl,cudart]' matching torch's CUDA major",
        )


def _find_cudart(lib_dirs: Iterable[Path]) -> tuple[Path, Path] | None:
    """(lib_dir, runtime file): the unversioned name first, else the highest versioned one."""
    for lib_dir in lib_dirs:
        if not lib_dir.is_dir():
            continue
        plain = lib_dir / "libcudart.so"
        if plain.exists():
            return lib_dir, plain
        versioned = sorted(
            (p for p in lib_dir.iterdir() if _CUDART_VERSIONED.match(p.name) and p.exists()),
            key=lambda p: [int(x) for x in re.findall(r"\d+", p.name)],
        )
        if versioned:
            # the SONAME file (libcudart.so.13) rather than the fully versioned one
            sonames = [p for p in versioned if re.fullmatch(r"libcudart\.so\.\d+", p.name)]
            return lib_dir, (sonames or versioned)[-1]
    return None


def nvcc_release(nvcc: Path | str, run: Callable[..., Any] = subprocess.run) -> str | None:
    """'13.0' from ``nvcc --version`` (None when it does not run)."""
    try:
        proc = run([str(nvcc), "--version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = _NVCC_RELEASE.search(proc.stdout or "")
    return f"{m.group(1)}.{m.group(2)}" if proc.returncode == 0 and m else None


def inspect_root(
    root: Path, *, source: str, layout: Layout | None = None, release: Callable[[Path], str | None] | None = None
) -> tuple[CudaToolkit | None, str | None]:
    """Validate one candidate root: (toolkit, None) or (None, why it is not usable)."""
    root = Path(root)
    if not root.is_dir():
        return None, f"{source}: {root} is not a folder"
    nvcc = root / "bin" / "nvcc"
    if not nvcc.is_file():
        return None, f"{source}: {root} has no bin/nvcc"
    includes = [root / "include", *sorted(root.glob("targets/*/include"))]
    include_dir = next((d for d in includes if (d / "cuda_runtime.h").is_file()), None)
    if include_dir is None:
        return None, f"{source}: {root} has no include/cuda_runtime.h (install the CUDA runtime headers)"
    found = _find_cudart([root / "lib64", root / "lib", *sorted(root.glob("targets/*/lib"))])
    if found is None:
        return None, f"{source}: {root} has no libcudart.so* in lib64/, lib/ or targets/*/lib"
    lib_dir, cudart = found
    if layout is None:
        layout = "pip" if root.parent.name == "nvidia" else "system"
    version = (release or nvcc_release)(nvcc)
    return (
        CudaToolkit(root=root, nvcc=nvcc, include_dir=include_dir, lib_dir=lib_dir, cudart=cudart, layout=layout,
                    source=source, version=version),
        None,
    )


def nvcc_home(nvcc: str, run: Callable[..., Any] = subprocess.run) -> Path | None:
    """The folder nvcc really runs from, read from its own ``--dryrun`` (``_HERE_=``).

    Works through wrapper scripts and symlinks alike; falls back to the resolved path."""
    try:
        proc = run([nvcc, "--dryrun", "-c", "xcompat_probe.cu"], capture_output=True, text=True, timeout=30,
                   check=False)
        for line in (proc.stdout + proc.stderr).splitlines():
            m = re.match(r"^#\$ _HERE_=(.+)$", line.strip())
            if m:
                return Path(m.group(1).strip()).parent
    except (OSError, subprocess.TimeoutExpired):
        pass
    real = Path(nvcc).resolve()
    return real.parent.parent if real.parent.name == "bin" else None


def site_dirs() -> list[Path]:
    """The site-packages folders of this interpreter (purelib, platlib and sys.path)."""
    seen: list[Path] = []
    for p in (sysconfig.get_paths().get("purelib"), sysconfig.get_paths().get("platlib"), *sys.path):
        if p and Path(p).is_dir() and Path(p) not in seen:
            seen.append(Path(p))
    return seen


def candidate_roots(
    env: Mapping[str, str],
    *,
    sites: Sequence[Path],
    which: Callable[..., str | None] = shutil.which,
    home_of_nvcc: Callable[[str], Path | None] = nvcc_home,
    major: str | None = None,
    default_root: Path = DEFAULT_ROOT,
) -> list[tuple[Path, str]]:
    out: list[tuple[Path, str]] = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if env.get(var):
            out.append((Path(env[var]), var))
    on_path = which("nvcc", path=env.get("PATH"))
    if on_path:
        home = home_of_nvcc(on_path)
        if home is not None:
            out.append((home, f"nvcc on PATH ({on_path})"))
    for mj in ([major] if major else list(PIP_MAJORS)):
        for site in sites:
            root = site / "nvidia" / f"cu{mj}"
            if root.is_dir():
                out.append((root, f"pip toolkit ({root})"))
    out.append((default_root, str(default_root)))
    unique: list[tuple[Path, str]] = []
    seen: set[str] = set()
    for root, how in out:
        key = os.path.realpath(root)
        if key not in seen:
            seen.add(key)
            unique.append((root, how))
    return unique


def find_cuda_toolkit(
    env: Mapping[str, str] | None = None,
    *,
    torch_cuda: str | None = None,
    sites: Sequence[Path] | None = None,
    which: Callable[..., str | None] = shutil.which,
    home_of_nvcc: Callable[[str], Path | None] = nvcc_home,
    release: Callable[[Path], str | None] | None = None,
    default_root: Path = DEFAULT_ROOT,
) -> ToolkitSearch:
    """The first complete toolkit among the candidates. With ``torch_cuda`` ("13.0"), a
    toolkit of another CUDA major is rejected: its objects would not link with torch's."""
    env = os.environ if env is None else env
    major = torch_cuda.split(".")[0] if torch_cuda else None
    rejected: list[str] = []
    for root, how in candidate_roots(env, sites=site_dirs() if sites is None else sites, which=which,
                                     home_of_nvcc=home_of_nvcc, major=major, default_root=default_root):
        toolkit, why = inspect_root(root, source=how, release=release)
        if toolkit is None:
            rejected.append(str(why))
            continue
        if major and toolkit.version and toolkit.version.split(".")[0] != major:
            rejected.append(f"{how}: nvcc {toolkit.version} in {root} does not match torch's CUDA {torch_cuda}")
            continue
        return ToolkitSearch(toolkit=toolkit, rejected=tuple(rejected))
    return ToolkitSearch(toolkit=None, rejected=tuple(rejected))


def _tool_in_sites(name: str, sites: Sequence[Path], layouts: Sequence[Sequence[str]]) -> str | None:
    for site in sites:
        for parts in layouts:
            path = site.joinpath(*parts, name)
            if path.is_file() and os.access(path, os.X_OK):
                return str(path)
    return None


def find_compute_sanitizer(env: Mapping[str, str], sites: Sequence[Path] | None = None) -> str | None:
    """``compute-sanitizer`` on PATH, under CUDA_HOME/CUDA_PATH, or from the pip wheel
    ``nvidia-cuda-sanitizer-api`` (``nvidia/cu13/bin/compute-sanitizer`` since 13.0; the
    12.x wheels used ``nvidia/cuda_sanitizer_api/compute-sanitizer/``)."""
    found = shutil.which("compute-sanitizer", path=env.get("PATH"))
    if found:
        return found
    roots = [Path(env[v]) for v in ("CUDA_HOME", "CUDA_PATH") if env.get(v)] + [DEFAULT_ROOT]
    for root in roots:
        for rel in (("bin",), ("compute-sanitizer",)):
            path = root.joinpath(*rel, "compute-sanitizer")
            if path.is_file() and os.access(path, os.X_OK):
                return str(path)
    layouts = [("nvidia", f"cu{mj}", "bin") for mj in PIP_MAJORS]
    layouts.append(("nvidia", "cuda_sanitizer_api", "compute-sanitizer"))
    return _tool_in_sites("compute-sanitizer", site_dirs() if sites is None else sites, layouts)


def find_cuobjdump(env: Mapping[str, str], sites: Sequence[Path] | None = None) -> str | None:
    """``cuobjdump`` on PATH, beside a toolkit's nvcc, or from the ``nvidia-cuda-cuobjdump`` wheel."""
    found = shutil.which("cuobjdump", path=env.get("PATH"))
    if found:
        return found
    roots = [Path(env[v]) for v in ("CUDA_HOME", "CUDA_PATH") if env.get(v)] + [DEFAULT_ROOT]
    for root in roots:
        path = root / "bin" / "cuobjdump"
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    layouts = [("nvidia", f"cu{mj}", "bin") for mj in PIP_MAJORS] + [("nvidia", "cuda_cuobjdump", "bin")]
    return _tool_in_sites("cuobjdump", site_dirs() if sites is None else sites, layouts)
