"""The reader of cibuildwheel's log used by the container tier (tests/helpers/cibw_log.py),
on an excerpt in cibuildwheel 4's format and on broken logs."""

from __future__ import annotations

import pytest
from tests.helpers.cibw_log import read_cibw_log

LOG = """\
cibuildwheel version 4.3.5

Build options:
  platform: linux
  architectures: x86_64
  build_selector: \n\
    build_config: cp311-manylinux_x86_64
    skip_config: *-musllinux_*
  audit_command: \n\
    abi3audit --strict --report {abi3_wheel}
  before_build: pip install 'torch==2.13.*' 'setuptools>=77'
  build_frontend: \n\
    name: build
    args: ['--no-isolation']
  container_engine: \n\
    name: docker
    create_args: ('--network=host', '-e', 'PIP_FIND_LINKS=/wheels')
  environment: \n\
  manylinux_images: \n\
    x86_64: xcompat-builder-debian:abc
  test_command: python -m pytest {package}/tests
  test_sources: \n\

Cache folder: /root/.cache/cibuildwheel
    + sh -c "pip install 'torch==2.13.*' 'setuptools>=77'"
    + python -m build /project --wheel --outdir=/tmp/cibuildwheel/built_wheel --no-isolation
    + sh -c 'python -m pytest /project/tests'
    + echo 'unterminated
"""


def test_build_options_are_read_nested() -> None:
    log = read_cibw_log(LOG)
    assert log.option("build_selector", "build_config") == "cp311-manylinux_x86_64"
    assert log.option("build_selector", "skip_config") == "*-musllinux_*"
    assert log.option("audit_command") == "abi3audit --strict --report {abi3_wheel}"
    assert log.option("build_frontend") == {"name": "build", "args": "['--no-isolation']"}
    assert log.option("container_engine", "create_args") == "('--network=host', '-e', 'PIP_FIND_LINKS=/wheels')"
    assert log.option("environment") == "" and log.option("test_sources") == ""
    assert log.option("manylinux_images", "x86_64") == "xcompat-builder-debian:abc"
    assert log.option("test_command") == "python -m pytest {package}/tests"
    with pytest.raises(KeyError, match="before_test"):
        log.option("before_test")
    with pytest.raises(KeyError):
        log.option("test_command", "deeper")


def test_commands_that_ran() -> None:
    log = read_cibw_log(LOG)
    assert log.shell_commands() == ["pip install 'torch==2.13.*' 'setuptools>=77'", "python -m pytest /project/tests"]
    (build,) = log.ran("python", "-m", "build")
    assert build[-1] == "--no-isolation"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no 'Build options:' block"),
        ("cibuildwheel version 4\n+ sh -c true\n", "no 'Build options:' block"),
        ("Build options:\n    stray value\n", "a value without a key"),
        ("x" * 20_000_001, "larger than"),
    ],
)
def test_broken_logs_are_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        read_cibw_log(text)
