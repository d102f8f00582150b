"""Built-in data the matrix resolves against: hosted-runner labels and backend support.

Rules are data: change a table here, not the expansion code.
"""

from __future__ import annotations

from types import MappingProxyType

# GitHub-hosted runner labels used when neither the platform nor the backend names its
# own. Architectures without a native hosted runner are built under emulation on x86_64.
DEFAULT_RUNNERS: MappingProxyType[tuple[str, str], tuple[str, ...]] = MappingProxyType(
    {
        ("linux", "x86_64"): ("ubuntu-24.04",),
        ("linux", "aarch64"): ("ubuntu-24.04-arm",),
        ("linux", "i686"): ("ubuntu-24.04",),
        ("linux", "ppc64le"): ("ubuntu-24.04",),
        ("linux", "s390x"): ("ubuntu-24.04",),
        ("linux", "armv7l"): ("ubuntu-24.04-arm",),
        ("macos", "arm64"): ("macos-14",),
        ("macos", "x86_64"): ("macos-13",),
        ("macos", "universal2"): ("macos-14",),
        ("windows", "AMD64"): ("windows-2022",),
        ("windows", "ARM64"): ("windows-11-arm",),
        ("windows", "x86"): ("windows-2022",),
    }
)

# Where each device backend can run at all: platform -> archs (None: every arch).
BACKEND_SUPPORT: MappingProxyType[str, MappingProxyType[str, frozenset[str] | None]] = MappingProxyType(
    {
        "cpu": MappingProxyType({"linux": None, "macos": None, "windows": None}),
        "cuda": MappingProxyType(
            {"linux": frozenset({"x86_64", "aarch64"}), "windows": frozenset({"AMD64"})}
        ),
        "rocm": MappingProxyType({"linux": frozenset({"x86_64"})}),
        "mps": MappingProxyType({"macos": frozenset({"arm64"})}),
    }
)

# Backends that need a GPU and therefore a self-hosted (or GPU-hosted) runner label.
GPU_BACKENDS = frozenset({"cuda", "rocm"})

DEFAULT_LINUX_POLICY = "manylinux_2_28"
DEFAULT_MACOS_DEPLOYMENT_TARGET = "11.0"

# Free-threaded CPython builds exist from this version on.
FREE_THREADED_SINCE = (3, 13)

# The defaults of the settings keys (tests, abi, coverage, gate) are not here: they live
# in the settings table, xcompat/settings/table.json, with each key's type and meaning.

# Plan output limits of the CI services (jobs per matrix).
GITHUB_MAX_JOBS = 256
GITLAB_MAX_JOBS = 200

# Keys a framework name must not take (they are cell fields in the plan outputs).
RESERVED_FRAMEWORK_NAMES = frozenset({"python", "platform", "arch", "backend", "toolkit", "id", "required"})

# What each cibuildwheel major version can select. ``free_threaded_enable``: the
# ``CIBW_ENABLE`` group needed for free-threaded builds older than ``free_threaded_default``.
CIBUILDWHEEL_RULES: MappingProxyType[int, MappingProxyType[str, object]] = MappingProxyType(
    {
        3: MappingProxyType(
            {
                "min_python": (3, 8),
                "free_threaded_min": (3, 13),
                "free_threaded_default": (3, 14),
                "free_threaded_enable": "cpython-freethreading",
            }
        ),
        4: MappingProxyType(
            {
                "min_python": (3, 9),
                "free_threaded_min": (3, 14),
                "free_threaded_default": (3, 14),
                "free_threaded_enable": None,
            }
        ),
    }
)
DEFAULT_CIBUILDWHEEL_MAJOR = 4
# The version of the plan document (``xcompat matrix plan``), its cibuildwheel form included.
PLAN_VERSION = 1
