"""Fixtures shared by every test area.

``sample_project``: path of examples/sample-ext (version 1.0.0).
``sample_project_v2``: path of examples/sample-ext-v2 (1.1.0, deliberate ABI changes).
``sample_wheels``: ``{"v1": Path, "v2": Path}``, repaired wheels built natively through
``xcompat.builder`` and cached across runs (see ``tests/helpers/sample.py``).
``sample_site``: ``{"v1": Path, "v2": Path}``, those wheels installed into folders for PYTHONPATH.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# The suite's `xcompat run`s judge this interpreter's cells: a run also starts the matrix's other
# Pythons this machine has (a venv each, the cells' frameworks installed), which
# tests/integration/pipeline/test_run_pythons.py covers on its own.
os.environ.setdefault("XCOMPAT_RUN_PYTHONS", "here")

# The suite runs as outside CI wherever it runs: a test that needs a forge's CI sets its markers
# itself. Left in place, the CI service's own variables would make every `xcompat` the tests start
# refuse command-line settings and unsigned matrices, as it must under CI.
for _name in [n for n in os.environ if n == "CI" or n.startswith(("GITHUB_", "GITLAB", "CI_"))]:
    del os.environ[_name]


@pytest.fixture(scope="session")
def sample_project() -> Path:
    from tests.helpers.sample import sample_project as project

    return project("v1")


@pytest.fixture(scope="session")
def sample_project_v2() -> Path:
    from tests.helpers.sample import sample_project as project

    return project("v2")


@pytest.fixture(scope="session")
def sample_wheels() -> dict[str, Path]:
    from tests.helpers.sample import sample_wheels as build

    return build()


@pytest.fixture(scope="session")
def sample_site(sample_wheels) -> dict[str, Path]:
    """``{"v1": Path, "v2": Path}``: folders with each sample wheel installed (``pip --target``);
    put one on PYTHONPATH of a subprocess to import the built ``sample_ext``."""
    from tests.helpers.sample import install_sample

    return {variant: install_sample(variant) for variant in sample_wheels}
