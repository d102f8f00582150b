"""The stubs and runtime-libraries checks on the real projects of the test tier, as the stages run
them (the modules the stage imports are those it finds in the installed wheel): no false finding.
markupsafe and ujson ship stubs for their C modules (stubtest compares them); simplejson ships
none and has nothing to check. The python floor of the same projects: test_python_floor_real.py."""

from __future__ import annotations

import sys

import pytest

from xcompat.contracts.import_probe import probe_imports
from xcompat.contracts.stubs import check_stubs
from xcompat.pipeline.stages.contracts_runtime_libraries import importable

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/<pid>/maps is Linux's")]

STUBBED = {"markupsafe": ["markupsafe._speedups"], "simplejson": [], "ujson": ["ujson"]}


@pytest.mark.parametrize("name", sorted(STUBBED))
def test_real_projects_have_no_false_contract_findings(name: str) -> None:
    from tests.helpers.real_projects import PROJECTS, built_wheel, installed

    project = PROJECTS[name]
    site = installed(built_wheel(project, project.version))
    stubs = check_stubs(site)
    assert stubs["modules"] == STUBBED[name]
    assert stubs["status"] == "passed" and stubs["findings"] == [], stubs["findings"]
    modules = importable(site)
    assert project.import_name in modules
    libraries = probe_imports(modules, paths=[site], project=project.name)
    assert libraries["status"] == "passed" and libraries["findings"] == [], libraries["findings"]
    mapped = libraries["libraries"]
    assert isinstance(mapped, list)
    extension = [lib for lib in mapped if lib["path"].startswith(str(site))]
    assert extension and all(lib["owner"] == "project" for lib in extension), extension
