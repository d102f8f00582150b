"""The cibuildwheel configuration derived from cells (no cibuildwheel run here)."""

from __future__ import annotations

import shlex

import pytest

from xcompat.builder.cibw import derive_runs, flavour_of, identifier_of_wheel
from xcompat.errors import InputError
from xcompat.model import Cell


def cell(python: str = "3.12", platform: str = "linux", arch: str = "x86_64", backend: str = "cpu", **kw) -> Cell:
    fw = kw.pop("frameworks", (("torch", "2.13"),))
    cid = f"py{python}-{platform}-{arch}-{backend}{kw.get('toolkit') or ''}-" + "-".join(f"{n}{v}" for n, v in fw)
    return Cell(id=cid, python=python, platform=platform, arch=arch, backend=backend, frameworks=fw, **kw)


def test_cpu_cells_share_one_run_with_exact_identifiers() -> None:
    cells = [cell("3.11"), cell("3.12"), cell("3.12", arch="aarch64"), cell("3.13t", policy="manylinux_2_28")]
    (run,) = derive_runs(cells, build_frameworks=())
    env = run.env
    assert env["CIBW_BUILD"].split() == [
        "cp311-manylinux_x86_64", "cp312-manylinux_x86_64", "cp312-manylinux_aarch64", "cp313t-manylinux_x86_64"]
    assert env["CIBW_ARCHS_LINUX"] == "x86_64 aarch64"
    assert env["CIBW_SKIP"] == "*-musllinux_*"  # no pp*/gp*: cibuildwheel warns about groups not enabled
    assert env["CIBW_MANYLINUX_X86_64_IMAGE"] == "manylinux_2_28"
    assert env["CIBW_CONTAINER_ENGINE"] == "docker"
    assert "CIBW_ENVIRONMENT_LINUX" not in env
    assert "CIBW_BEFORE_BUILD" not in env  # torch is not a build requirement here
    assert env["CIBW_TEST_COMMAND"].endswith("{package}/tests")
    assert run.cells["cp312-manylinux_x86_64"] == (cells[1].id,)


def test_repair_command_excludes_torch_and_gpu_runtimes_quoted() -> None:
    (run,) = derive_runs([cell()])
    argv = shlex.split(run.env["CIBW_REPAIR_WHEEL_COMMAND_LINUX"])
    excluded = [argv[i + 1] for i, a in enumerate(argv) if a == "--exclude"]
    assert {"libtorch.so*", "libc10.so*", "libcudart.so*", "libamdhip64.so*", "libcublas.so*"} <= set(excluded)
    assert argv[:4] == ["auditwheel", "repair", "-w", "{dest_dir}"] and argv[-1] == "{wheel}"


def test_cuda_cells_get_arch_list_builder_image_and_gpu_container() -> None:
    cuda = cell("3.12", backend="cuda", toolkit="12.8", gpu_archs=("sm_90", "sm_80"))
    runs = derive_runs([cell("3.12"), cuda], build_frameworks=("torch",),
                       build_requirements=("setuptools>=70", "torch>=2.4", "wheel"))
    assert len(runs) == 2
    gpu = next(r for r in runs if r.flavour.startswith("cuda"))
    env = gpu.env
    assert "TORCH_CUDA_ARCH_LIST='8.0;9.0+PTX'" in env["CIBW_ENVIRONMENT_LINUX"]
    assert "CUDA_HOME=/usr/local/cuda" in env["CIBW_ENVIRONMENT_LINUX"]
    assert env["CIBW_CONTAINER_ENGINE"] == "docker; create_args: --gpus all"
    assert env["CIBW_MANYLINUX_X86_64_IMAGE"] == "ghcr.io/xcompat/manylinux_2_28-cuda:12.8"
    before = shlex.split(env["CIBW_BEFORE_BUILD"])
    assert before[:3] == ["pip", "install", "torch==2.13.*"]
    assert "setuptools>=70" in before and "wheel" in before and "torch>=2.4" not in before
    assert before[-2:] == ["--extra-index-url", "https://download.pytorch.org/whl/cu128"]
    assert env["CIBW_BUILD_FRONTEND"] == "build; args: --no-isolation"
    cpu = next(r for r in runs if r.flavour.startswith("cpu"))
    assert cpu.env["CIBW_BEFORE_BUILD"].endswith("https://download.pytorch.org/whl/cpu")


def test_builder_image_override_from_environment() -> None:
    cuda = cell(backend="cuda", toolkit="12.6", gpu_archs=("sm_80",))
    env = {"XCOMPAT_CUDA_BUILDER_IMAGE": "registry.example/builder@sha256:" + "a" * 64}
    (run,) = derive_runs([cuda], env=env)
    assert run.env["CIBW_MANYLINUX_X86_64_IMAGE"] == env["XCOMPAT_CUDA_BUILDER_IMAGE"]


def test_cpu_builder_image_and_container_args_from_environment() -> None:
    env = {"XCOMPAT_CPU_BUILDER_IMAGE": "xcompat-builder-debian:1",
           "XCOMPAT_CONTAINER_ARGS": "--network=host -v /etc/ssl/certs:/etc/ssl/certs:ro -e 'A=b c'"}
    (run,) = derive_runs([cell(policy="manylinux_2_28")], env=env)
    assert run.env["CIBW_MANYLINUX_X86_64_IMAGE"] == "xcompat-builder-debian:1"
    assert run.env["CIBW_CONTAINER_ENGINE"] == "docker; create_args: " + env["XCOMPAT_CONTAINER_ARGS"]
    cuda = cell(backend="cuda", toolkit="12.8", gpu_archs=("sm_90",))
    (gpu,) = derive_runs([cuda], env=env)
    # Appended to the backend's own create_args, which stay first.
    assert gpu.env["CIBW_CONTAINER_ENGINE"] == "docker; create_args: --gpus all " + env["XCOMPAT_CONTAINER_ARGS"]
    assert gpu.env["CIBW_MANYLINUX_X86_64_IMAGE"] == "ghcr.io/xcompat/manylinux_2_28-cuda:12.8"
    (plain,) = derive_runs([cell(policy="manylinux_2_28")], env={})
    assert plain.env["CIBW_MANYLINUX_X86_64_IMAGE"] == "manylinux_2_28"


def test_unsplittable_container_args_are_refused() -> None:
    with pytest.raises(InputError, match="XCOMPAT_CONTAINER_ARGS"):
        derive_runs([cell()], env={"XCOMPAT_CONTAINER_ARGS": "-v '/a:/b"})


def test_the_wheel_is_tested_against_the_framework_it_was_built_against() -> None:
    (run,) = derive_runs([cell(frameworks=(("torch", "2.13"),))], build_frameworks=("torch",),
                         build_requirements=("torch>=2.4", "setuptools"))
    assert shlex.split(run.env["CIBW_BEFORE_TEST"]) == [
        "pip", "install", "torch==2.13.*", "--extra-index-url", "https://download.pytorch.org/whl/cpu"]
    (untested,) = derive_runs([cell()], build_frameworks=("torch",), test_command=None)
    assert "CIBW_BEFORE_TEST" not in untested.env
    (plain,) = derive_runs([cell()], build_frameworks=())
    assert "CIBW_BEFORE_TEST" not in plain.env


@pytest.mark.parametrize(("value", "expected"), [("", None), ("  ", None),
                                                 ("https://mirror.example/torch-cpu", "https://mirror.example/torch-cpu")])
def test_framework_index_override(value: str, expected: str | None) -> None:
    (run,) = derive_runs([cell()], build_frameworks=("torch",), env={"XCOMPAT_TORCH_INDEX": value})
    for key in ("CIBW_BEFORE_BUILD", "CIBW_BEFORE_TEST"):
        argv = shlex.split(run.env[key])
        if expected is None:
            assert "--extra-index-url" not in argv
        else:
            assert argv[-2:] == ["--extra-index-url", expected]


def test_rocm_cells() -> None:
    rocm = cell(backend="rocm", toolkit="6.2", gpu_archs=("gfx942", "gfx90a"))
    (run,) = derive_runs([rocm], build_frameworks=("torch",), build_requirements=("torch",))
    assert "PYTORCH_ROCM_ARCH='gfx942;gfx90a'" in run.env["CIBW_ENVIRONMENT_LINUX"]
    assert "--device=/dev/kfd" in run.env["CIBW_CONTAINER_ENGINE"]
    assert run.env["CIBW_BEFORE_BUILD"].endswith("https://download.pytorch.org/whl/rocm6.2")


def test_torch_versions_split_runs_only_when_the_project_builds_against_torch() -> None:
    cells = [cell(frameworks=(("torch", "2.5"),)), cell(frameworks=(("torch", "2.13"),))]
    assert len(derive_runs(cells, build_frameworks=("torch",))) == 2
    assert len(derive_runs(cells, build_frameworks=())) == 1
    assert flavour_of(cells[0], ("torch",)) == "cpu-torch2.5"


def test_musllinux_and_macos() -> None:
    runs = derive_runs([cell(policy="musllinux_1_2", arch="aarch64"), cell(platform="macos", arch="arm64",
                                                                          policy="11.0")])
    linux = next(r for r in runs if r.platform == "linux")
    assert linux.env["CIBW_BUILD"] == "cp312-musllinux_aarch64"
    assert "*-manylinux_*" in linux.env["CIBW_SKIP"]
    assert linux.env["CIBW_MUSLLINUX_AARCH64_IMAGE"] == "musllinux_1_2"
    mac = next(r for r in runs if r.platform == "macos")
    assert mac.env["CIBW_BUILD"] == "cp312-macosx_arm64"
    assert mac.env["MACOSX_DEPLOYMENT_TARGET"] == "11.0"
    assert "--exclude libtorch" in mac.env["CIBW_REPAIR_WHEEL_COMMAND_MACOS"]


def test_no_test_command() -> None:
    (run,) = derive_runs([cell()], test_command=None)
    assert "CIBW_TEST_COMMAND" not in run.env and "CIBW_TEST_REQUIRES" not in run.env


def test_bad_cells_are_refused() -> None:
    with pytest.raises(InputError, match="unknown platform"):
        derive_runs([cell(platform="beos")])
    with pytest.raises(InputError, match="not a CUDA arch"):
        derive_runs([cell(backend="cuda", gpu_archs=("gfx90a",))])


@pytest.mark.parametrize(
    ("filename", "expected"),
    [
        ("pkg-1.0-cp312-cp312-manylinux_2_28_x86_64.whl", "cp312-manylinux_x86_64"),
        ("pkg-1.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", "cp312-manylinux_x86_64"),
        ("pkg-1.0-cp313-cp313t-manylinux_2_28_x86_64.whl", "cp313t-manylinux_x86_64"),
        ("pkg-1.0-cp312-cp312-musllinux_1_2_aarch64.whl", "cp312-musllinux_aarch64"),
        ("pkg-1.0-cp312-cp312-macosx_11_0_arm64.whl", "cp312-macosx_arm64"),
        ("pkg-1.0-cp312-cp312-win_amd64.whl", "cp312-win_amd64"),
        ("pkg-1.0-cp311-cp311-manylinux_2_28_x86_64.whl", None),
        ("pkg-1.0-cp312-cp312-manylinux_2_28_aarch64.whl", None),
    ],
)
def test_identifier_of_wheel(filename: str, expected: str | None) -> None:
    idents = ["cp312-manylinux_x86_64", "cp313t-manylinux_x86_64", "cp312-musllinux_aarch64",
              "cp312-macosx_arm64", "cp312-win_amd64"]
    assert identifier_of_wheel(filename, idents) == expected
