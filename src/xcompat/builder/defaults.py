"""Defaults of ``xcompat build`` as data: what is never grafted into a wheel, which
frameworks are taken from the runner, where tools come from.

Kept in one table so that users (and the docs) can see every default in one place.
"""

from __future__ import annotations

from types import MappingProxyType

# Shared libraries that ``auditwheel repair`` / ``delocate`` must not copy into a wheel.
# They belong to frameworks and driver stacks that are installed separately and must be
# the one copy in the process: a grafted libtorch or libcudart makes the wheel hundreds of
# MB larger and loads a second, mismatched runtime next to the framework's own.
GRAFT_EXCLUDES: MappingProxyType[str, tuple[str, ...]] = MappingProxyType({
    "torch": (
        "libtorch.so*", "libtorch_*.so*", "libc10.so*", "libc10_*.so*", "libshm.so*",
        "libtorch_global_deps.so*", "libgomp-*.so*",
    ),
    "cuda": (
        "libcuda.so*", "libcudart.so*", "libcublas.so*", "libcublasLt.so*", "libcudnn*.so*",
        "libcufft.so*", "libcufftw.so*", "libcurand.so*", "libcusolver.so*", "libcusolverMg.so*",
        "libcusparse.so*", "libcusparseLt.so*", "libnccl.so*", "libnvrtc.so*", "libnvrtc-builtins.so*",
        "libnvJitLink.so*", "libnvToolsExt.so*", "libnvtx3interop.so*", "libcupti.so*", "libnvidia-ml.so*",
        "libcufile.so*",
    ),
    "rocm": (
        "libamdhip64.so*", "libhiprtc.so*", "libhsa-runtime64.so*", "librocblas.so*", "libhipblas.so*",
        "libhipblaslt.so*", "libMIOpen.so*", "librccl.so*", "libroctx64.so*", "libroctracer64.so*",
        "librocm_smi64.so*", "libhipsparse.so*", "libhipfft.so*", "librocfft.so*", "librocrand.so*",
        "libhiprand.so*", "libamd_comgr.so*", "librocsolver.so*", "libhipsolver.so*",
    ),
})

# macOS: delocate matches a substring of the library path.
DELOCATE_EXCLUDES: tuple[str, ...] = ("libtorch", "libc10", "libshm", "libomp")

# Build requirements that must come from the runner, never from a fresh download:
# an isolated build would fetch the newest (multi-GB) release, not the one under test.
RUNNER_FRAMEWORKS: frozenset[str] = frozenset({"torch", "jax", "jaxlib", "tensorflow", "paddlepaddle", "mlx"})
# Their import names: a setup.py importing one builds against the runner's, like a build requirement.
FRAMEWORK_MODULES: MappingProxyType[str, str] = MappingProxyType({
    "torch": "torch", "jax": "jax", "jaxlib": "jaxlib", "tensorflow": "tensorflow", "paddle": "paddlepaddle",
    "mlx": "mlx",
})

# Linux policy used for ``auditwheel repair --plat`` when the cell names none.
DEFAULT_LINUX_POLICY = "auto"

# Environment variables read by the native backend.
ENV_NO_CCACHE = "XCOMPAT_NO_CCACHE"


def default_excludes() -> tuple[str, ...]:
    """Every Linux exclude pattern, in table order, without duplicates."""
    seen: dict[str, None] = {}
    for patterns in GRAFT_EXCLUDES.values():
        for pattern in patterns:
            seen.setdefault(pattern, None)
    return tuple(seen)

# -- cibuildwheel backend -------------------------------------------------------------------

# Builder images for GPU wheels (manylinux + toolkit); ``{toolkit}`` and ``{arch}`` are filled
# in. Built from images/manylinux_2_28-cuda.Dockerfile; override with the environment
# variable named in BUILDER_IMAGE_ENV (a registry path pinned by digest is best).
BUILDER_IMAGES: MappingProxyType[str, str | None] = MappingProxyType({
    "cpu": None,  # cibuildwheel's manylinux/musllinux image of the cell's policy
    "cuda": "ghcr.io/xcompat/manylinux_2_28-cuda:{toolkit}",
    "rocm": None,  # no public manylinux + ROCm builder: build ROCm wheels natively on ROCm runners
})
BUILDER_IMAGE_ENV: MappingProxyType[str, str] = MappingProxyType({
    "cpu": "XCOMPAT_CPU_BUILDER_IMAGE",
    "cuda": "XCOMPAT_CUDA_BUILDER_IMAGE",
    "rocm": "XCOMPAT_ROCM_BUILDER_IMAGE",
})

# Container options for the test step inside cibuildwheel's build container, so that the
# tests of a GPU wheel see the GPU of the runner.
CONTAINER_ENGINE: MappingProxyType[str, str] = MappingProxyType({
    "cpu": "docker",
    "cuda": "docker; create_args: --gpus all",
    "rocm": "docker; create_args: --device=/dev/kfd --device=/dev/dri --group-add video",
})

# More ``create_args`` for every build container (mounts, ``--network``, ``-e``), appended to
# the backend's own: e.g. a mirror's CA bundle or a local wheel folder with PIP_FIND_LINKS.
CONTAINER_ARGS_ENV = "XCOMPAT_CONTAINER_ARGS"

# Where pip finds a given framework build; ``{cuda}`` is e.g. 128 for toolkit 12.8.
FRAMEWORK_INDEXES: MappingProxyType[str, MappingProxyType[str, str]] = MappingProxyType({
    "torch": MappingProxyType({
        "cpu": "https://download.pytorch.org/whl/cpu",
        "cuda": "https://download.pytorch.org/whl/cu{cuda}",
        "rocm": "https://download.pytorch.org/whl/rocm{rocm}",
    }),
})

# Environment variables that replace a framework's index (an empty value: no extra index,
# pip's own configuration decides, e.g. PIP_FIND_LINKS or PIP_INDEX_URL of a mirror).
FRAMEWORK_INDEX_ENV: MappingProxyType[str, str] = MappingProxyType({
    "torch": "XCOMPAT_TORCH_INDEX",
})

# Toolkit locations inside the builder images.
TOOLKIT_ENV: MappingProxyType[str, MappingProxyType[str, str]] = MappingProxyType({
    "cuda": MappingProxyType({"CUDA_HOME": "/usr/local/cuda", "PATH": "$PATH:/usr/local/cuda/bin"}),
    "rocm": MappingProxyType({"ROCM_PATH": "/opt/rocm", "PATH": "$PATH:/opt/rocm/bin"}),
})

DEFAULT_TEST_REQUIRES = ("pytest",)
DEFAULT_TEST_COMMAND = "python -m pytest -p no:cacheprovider {package}/tests"
