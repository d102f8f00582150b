"""One run of torch's ``cpp_extension.load`` for the kernel library: what it compiles
(:class:`ExtensionJob`), the environment it runs in, and how a failure reads (exit 5 when torch
cannot pick device architectures, exit 4 with the compiler's last lines when the build fails).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from xcompat.errors import ToolError, UnavailableError

if TYPE_CHECKING:
    from xcompat.devices.toolkit import CudaToolkit


@dataclass(frozen=True, kw_only=True)
class ExtensionJob:
    """The arguments of one ``cpp_extension.load`` and the environment variables it reads."""

    name: str
    sources: list[str]
    cflags: list[str]
    cuda_cflags: list[str]
    ldflags: list[str]
    include_paths: list[str]
    environ: dict[str, str]  # MAX_JOBS, CUDA_HOME, TORCH_CUDA_ARCH_LIST, PYTORCH_ROCM_ARCH
    with_device: bool


def compile_extension(job: ExtensionJob, build_dir: Path, *, verbose: bool) -> Path:
    """Build ``job`` in ``build_dir``; the path of the shared library it produced."""
    try:
        with _environ(job.environ):
            library = _load(job, build_dir, verbose=verbose)
    except IndexError as exc:  # torch's arch detection with no GPU and an empty arch list
        raise UnavailableError(
            f"torch could not pick the device architectures for the build ({exc})",
            hint="set gpu-archs in the matrix backend (XCOMPAT_GPU_ARCHS) or TORCH_CUDA_ARCH_LIST",
        ) from None
    except (RuntimeError, subprocess.CalledProcessError, OSError) as exc:
        tail = _build_log_tail(exc)
        raise ToolError(
            f"building the kernel library failed in {build_dir}",
            hint="see the compiler output below; rerun with -v for the full log",
            details=tail,
        ) from None
    library_path = Path(library) if isinstance(library, str) else build_dir / f"{job.name}.so"
    if not library_path.is_file():
        candidates = sorted(build_dir.glob(f"{job.name}*.so"))
        if not candidates:
            raise ToolError(f"the build finished but no library was found in {build_dir}")
        library_path = candidates[-1]
    return library_path


@contextmanager
def _environ(overrides: Mapping[str, str]) -> Iterator[None]:
    """``overrides`` set in ``os.environ`` (torch's build reads them there), restored after."""
    saved = {k: os.environ.get(k) for k in overrides}
    os.environ.update(overrides)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _load(job: ExtensionJob, build_dir: Path, *, verbose: bool) -> object:
    from torch.utils import cpp_extension

    saved_home = getattr(cpp_extension, "CUDA_HOME", None)
    if "CUDA_HOME" in job.environ:
        # torch guessed its CUDA_HOME once, at import (possibly from a wrapper nvcc)
        cpp_extension.CUDA_HOME = job.environ["CUDA_HOME"]
    try:
        return cpp_extension.load(
            name=job.name,
            sources=job.sources,
            extra_cflags=job.cflags,
            extra_cuda_cflags=job.cuda_cflags if job.with_device else None,
            extra_ldflags=job.ldflags or None,
            extra_include_paths=job.include_paths or None,
            build_directory=str(build_dir),
            verbose=verbose,
            with_cuda=job.with_device,
            is_python_module=False,
        )
    finally:
        cpp_extension.CUDA_HOME = saved_home


def cudart_link_flags(toolkit: CudaToolkit, build_dir: Path) -> list[str]:
    """Linker flags that make torch's ``-lcudart`` resolve against this toolkit's runtime.

    torch's ``cpp_extension`` always links ``-L$CUDA_HOME/lib64 -lcudart``. The pip
    toolkit ships only ``libcudart.so.13`` in ``lib/``: a one-line GNU linker script
    (``INPUT(.../libcudart.so.13)``, the mechanism glibc uses for ``libc.so``) in the build
    folder answers ``-lcudart`` with that exact file, so the library records
    ``libcudart.so.13`` as needed and nothing in the toolkit is changed."""
    flags = [f"-L{toolkit.lib_dir}"]
    if toolkit.cudart.name != "libcudart.so":
        link_dir = build_dir / "cudart-link"
        link_dir.mkdir(parents=True, exist_ok=True)
        script = link_dir / "libcudart.so"
        text = f"/* written by xcompat: -lcudart -> {toolkit.cudart.name} of the pip CUDA toolkit */\n"
        text += f"INPUT({toolkit.cudart.resolve()})\n"
        if not script.is_file() or script.read_text(encoding="utf-8") != text:
            script.write_text(text, encoding="utf-8")
        flags.insert(0, f"-L{link_dir}")
    return flags


def _build_log_tail(exc: BaseException, lines: int = 20) -> list[str]:
    text = str(exc)
    out = getattr(exc, "output", None)
    if isinstance(out, bytes):
        text += "\n" + out.decode(errors="replace")
    elif isinstance(out, str):
        text += "\n" + out
    return [ln for ln in text.splitlines() if ln.strip()][-lines:]
