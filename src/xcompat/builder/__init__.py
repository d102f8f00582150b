"""Wheels for every cell: cibuildwheel driver, native builds, repair and audits.

Public API::

    from xcompat.builder import build_project, NativeOptions
    document = build_project(Path("examples/sample-ext"), Path("wheelhouse"), backend="native")
    document["wheels"][0]["file"], document["wheels"][0]["platform_policy"]["symbol_tag"]

``build_project`` writes ``<out>/build.json`` (schema ``build``) and returns it. The
pieces are importable on their own: ``xcompat.builder.native`` (build + repair),
``xcompat.builder.audit`` (auditwheel show, policy symbols, abi3audit),
``xcompat.builder.requirements`` (what a project builds against; isolated or not),
``xcompat.builder.cibw_runs`` (cibuildwheel configuration derived from the plan),
``xcompat.builder.cibw`` (cibuildwheel runs),
``xcompat.builder.record`` (the ``build.json`` document).
"""

from __future__ import annotations

from xcompat.builder.driver import BuildSettings, build_project
from xcompat.builder.native import NativeOptions

__all__ = ["BuildSettings", "NativeOptions", "build_project"]
