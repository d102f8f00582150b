"""The cibuildwheel selectors of a plan: per platform, the build identifiers and the ``CIBW_*``
environment that selects exactly the wheels the cells need (``matrix plan --format cibuildwheel``).

The rules of each cibuildwheel major version (what it builds, how free-threaded builds are
enabled) are data in ``xcompat.matrix.defaults.CIBUILDWHEEL_RULES``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xcompat.matrix import defaults as D
from xcompat.matrix.config import Matrix
from xcompat.model import Cell

_WINDOWS_TAGS = {"AMD64": "win_amd64", "ARM64": "win_arm64", "x86": "win32"}


def build_identifier(python: str, platform: str, arch: str, policy: str | None) -> str:
    """The cibuildwheel build identifier of one wheel, e.g. ``cp313t-manylinux_x86_64``."""
    tag = "cp" + python.replace(".", "")
    if platform == "linux":
        family = "musllinux" if (policy or "").startswith("musllinux") else "manylinux"
        return f"{tag}-{family}_{arch}"
    if platform == "macos":
        return f"{tag}-macosx_{arch}"
    return f"{tag}-{_WINDOWS_TAGS.get(arch, arch.lower())}"


def installed_cibuildwheel_major() -> int | None:
    """Major version of the installed cibuildwheel (read from its metadata, not imported), or None."""
    from importlib import metadata

    try:
        return int(metadata.version("cibuildwheel").split(".")[0])
    except (metadata.PackageNotFoundError, ValueError):
        return None


def _py(version: str) -> tuple[int, int]:
    major, minor = version.rstrip("t").split(".")
    return int(major), int(minor)


def cibuildwheel_selectors(
    matrix: Matrix, cells: Sequence[Cell], *, cibuildwheel_major: int | None = None
) -> dict[str, Any]:
    """Per platform: the build identifiers and the ``CIBW_*`` environment that selects exactly them.

    Wheels do not depend on the device backend or the framework versions tested, so
    cells that differ only in those share one wheel. ``cibuildwheel_major`` (default:
    the installed one, else the newest known) decides what it can build; wheels it
    cannot build (e.g. 3.13t on cibuildwheel 4) are listed under ``unsupported`` with the
    reason, for the native build backend to cover.
    """
    major = cibuildwheel_major or installed_cibuildwheel_major() or D.DEFAULT_CIBUILDWHEEL_MAJOR
    rules = D.CIBUILDWHEEL_RULES.get(major) or D.CIBUILDWHEEL_RULES[max(D.CIBUILDWHEEL_RULES)]
    platforms: dict[str, Any] = {}
    unsupported: list[dict[str, str]] = []
    for plat in ("linux", "macos", "windows"):
        mine = [c for c in cells if c.platform == plat]
        if not mine:
            continue
        ids: list[str] = []
        archs: list[str] = []
        enable: list[str] = []
        images: dict[str, str] = {}
        for c in mine:
            ident = build_identifier(c.python, c.platform, c.arch, c.policy)
            if ident in ids or any(u["identifier"] == ident for u in unsupported):
                continue
            if _py(c.python) < rules["min_python"]:  # type: ignore[operator]
                unsupported.append(
                    {
                        "identifier": ident,
                        "reason": f"cibuildwheel {major}.x does not build Python {c.python}",
                    }
                )
                continue
            if c.free_threaded:
                if _py(c.python) < rules["free_threaded_min"]:  # type: ignore[operator]
                    unsupported.append(
                        {
                            "identifier": ident,
                            "reason": f"cibuildwheel {major}.x does not build "
                            f"free-threaded Python {c.python}; build it with --backend native",
                        }
                    )
                    continue
                group = rules["free_threaded_enable"]
                if group and _py(c.python) < rules["free_threaded_default"] and group not in enable:  # type: ignore[operator]
                    enable.append(str(group))
            ids.append(ident)
            if c.arch not in archs:
                archs.append(c.arch)
            if plat == "linux":
                policy = c.policy or D.DEFAULT_LINUX_POLICY
                family = "MUSLLINUX" if policy.startswith("musllinux") else "MANYLINUX"
                images[f"CIBW_{family}_{c.arch.upper()}_IMAGE"] = policy
        if not ids:
            continue
        env = {"CIBW_BUILD": " ".join(ids), f"CIBW_ARCHS_{plat.upper()}": " ".join(archs)}
        if enable:
            env["CIBW_ENABLE"] = " ".join(enable)
        env.update(images)
        if plat == "macos":
            target = next((c.policy for c in mine if c.policy), D.DEFAULT_MACOS_DEPLOYMENT_TARGET)
            env["MACOSX_DEPLOYMENT_TARGET"] = target
        platforms[plat] = {"identifiers": ids, "env": env}
    return {
        "version": D.PLAN_VERSION,
        "format": "cibuildwheel",
        "repo": matrix.repo,
        "serial": matrix.serial,
        "matrix_sha256": matrix.sha256,
        "cibuildwheel_major": major,
        "platforms": platforms,
        "unsupported": unsupported,
    }
