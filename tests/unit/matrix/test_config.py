from __future__ import annotations

import dataclasses
import datetime as dt

import pytest
from tests.helpers.matrix import matrix_text, sample_matrix_path

from xcompat.errors import InputError
from xcompat.matrix import load_matrix


def test_sample_matrix_typed_view():
    m = load_matrix(sample_matrix_path())
    assert m.repo == "xcompat-demo/sample-ext"
    assert m.expires == dt.date(2036, 12, 31)
    assert m.pythons == ("3.10", "3.11", "3.12", "3.13", "3.13t")
    assert [p.name for p in m.platforms] == ["linux", "macos"]
    assert m.platform("linux").policy == "manylinux_2_28"
    assert m.platform("macos").deployment_target == "11.0"
    assert m.backend_names == ("cpu", "cuda", "rocm", "mps")
    cuda = m.backend("cuda")
    assert (cuda.required, cuda.toolkits, cuda.gpu_archs) == (False, ("12.8",), ("sm_80", "sm_90"))
    assert cuda.labels("linux", "x86_64", ("fallback",))[0] == "self-hosted"
    assert m.backend("rocm").runs_on["*"][-1] == "rocm"
    assert m.backend("cpu").required is True
    assert dict(m.frameworks) == {"torch": ("2.5", "2.13"), "numpy": ("2.1",)}
    assert m.coverage.overall == 60.0 and m.coverage.diff == 70.0
    assert m.gate.tag_pattern == "v*" and m.gate.required_backends == ("cpu",)
    assert m.abi.baseline == "last-release-tag" and m.abi.gating is None
    assert dict(m.abi.bumps) == {"glibc_floor_raised": "minor"}
    assert m.tests.kernels == "all" and m.tests.isolation == "test" and m.tests.timeout == 120.0
    assert len(m.sha256) == 64


def test_defaults_for_a_minimal_matrix():
    m = load_matrix(matrix_text().encode(), source="m.yml")
    assert m.expires is None
    assert m.tests.pytest_paths == ("tests",) and m.tests.timeout == 300.0 and m.tests.kernels == "all"
    assert m.coverage.overall is None and m.coverage.diff is None
    assert m.gate.required_backends == ("cpu",)
    assert m.platform("linux").labels("x86_64") == ("ubuntu-24.04",)
    assert m.abi.bumps == {}


def test_matrix_is_frozen():
    m = load_matrix(matrix_text().encode())
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.serial = 99  # type: ignore[misc]
    with pytest.raises(TypeError):
        m.frameworks["torch"] = ("1.0",)  # type: ignore[index]
    with pytest.raises(TypeError):
        m.abi.bumps["x"] = "major"  # type: ignore[index]


def test_kernels_none_and_list():
    assert load_matrix(matrix_text(extra="tests:\n  kernels: none\n").encode()).tests.kernels == ()
    m = load_matrix(matrix_text(extra="tests:\n  kernels: [add, fma]\n").encode())
    assert m.tests.kernels == ("add", "fma")


def test_expired_uses_the_given_day():
    m = load_matrix(matrix_text(extra="expires: 2030-01-01\n").encode())
    assert not m.expired(dt.date(2030, 1, 1))
    assert m.expired(dt.date(2030, 1, 2))


@pytest.mark.parametrize(
    "extra, message",
    [
        ("exclude:\n  - backend: cpuu\n", "did you mean 'cpu'?"),
        ("exclude:\n  - python: '3.9'\n", "never matches"),
        ("frameworks:\n  python: ['1']\n", "duplicate key 'frameworks'"),
        (
            "include:\n  - {python: '3.12', platform: linux, arch: x86_46, backend: cpu}\n",
            "did you mean 'x86_64'?",
        ),
        ("tests:\n  isolation: tests\n", "did you mean 'test'?"),
        ("abi:\n  bumps: {symbol_removed: huge}\n", "expected one of"),
        (
            "include:\n  - {python: '3.12', platform: linux, arch: x86_64, backend: cpu, toolkit: '12.8'}\n",
            "backend 'cpu' has no toolkit",
        ),
        # pytest options that run no test: the run would pass (or find "no tests") having tested nothing
        ("tests:\n  pytest-args: ['-q', '--setup-only']\n", "$.tests.pytest-args[1]: --setup-only makes pytest set up"),
        ("tests:\n  pytest-args: ['--collect-only']\n", "--collect-only makes pytest list the tests"),
        ("tests:\n  pytest-args: ['--fixtures=x']\n", "--fixtures makes pytest list the fixtures"),
    ],
)
def test_cross_field_errors(extra, message):
    with pytest.raises(InputError) as info:
        load_matrix(matrix_text(extra=extra).encode(), source="m.yml")
    assert message in str(info.value)
    assert info.value.line is not None


def test_reserved_framework_name():
    text = matrix_text().replace("frameworks:\n  torch:", "frameworks:\n  arch:")
    with pytest.raises(InputError, match="cannot be a framework name"):
        load_matrix(text.encode())


def test_backend_runs_on_key_must_be_configured():
    text = matrix_text(extra="").replace(
        "  cpu:\n    required: true\n",
        "  cpu:\n    runs-on:\n      linux-aarch64: [x]\n",
    )
    with pytest.raises(InputError, match="did you mean 'linux-x86_64'"):
        load_matrix(text.encode())


def test_pytest_args_that_run_tests_are_kept():
    m = load_matrix(matrix_text(extra="tests:\n  pytest-args: ['--setup-show', '-k', '-h', '-rfE', '-xkhigh']\n").encode())
    assert m.tests.pytest_args == ("--setup-show", "-k", "-h", "-rfE", "-xkhigh")


@pytest.mark.parametrize(("args", "found"), [
    (["-qV"], (0, "-V")), (["-x", "-vh"], (1, "-h")), (["-k", "x", "--help"], (2, "--help")),
    (["--co"], (0, "--co")), (["--version=1"], (0, "--version")),
    (["-k", "-h"], None), (["-khigh"], None), (["-p", "no:cacheprovider", "-rh"], None), ([], None),
])
def test_not_running_options_are_found_where_pytest_would_read_them(args, found):
    from xcompat.settings.pytest_options import not_running_option

    got = not_running_option(args)
    assert (got[:2] if got else None) == found
