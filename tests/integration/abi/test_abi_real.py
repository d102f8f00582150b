"""ABI diff, snapshot, links and stable audit on libraries built here with gcc / nvcc, real
wheels, griffe and torch (CPU). Heavy inputs that only exist on some machines are skipped
with the reason printed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers import abi as h
from tests.helpers.wheels import fetch_wheel

from xcompat.abi import diff_paths
from xcompat.abi.elf import read_elf
from xcompat.abi.links import check_links
from xcompat.abi.stable import audit_stable
from xcompat.jsonio import validate

XCOMPAT = [sys.executable, "-m", "xcompat"]


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GITLAB"))}
    return subprocess.run([*XCOMPAT, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600, check=False)


def kinds(doc) -> set[tuple[str, str | None]]:
    return {(f["kind"], f["symbol"]) for f in doc["findings"]}


# -- shared libraries built with g++ ----------------------------------------------------------
def test_reader_matches_nm(demo_libs):
    nm = subprocess.run(["nm", "-D", "--defined-only", "--with-symbol-versions", str(demo_libs["v2"])],
                        capture_output=True, text=True, check=True).stdout
    from_nm = set()
    for line in nm.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] not in ("A",):
            from_nm.add(parts[2].replace("@@", "@"))
    ours = set(read_elf(demo_libs["v2"]).exports)
    assert from_nm and from_nm <= ours
    assert {k for k in ours - from_nm} <= {"DEMO_1.0@DEMO_1.0", "DEMO_2.0@DEMO_2.0"}


def test_library_pair_findings(demo_libs):
    doc = diff_paths(demo_libs["v1"], demo_libs["v2"]).to_dict()
    validate("abi-diff", doc)
    got = kinds(doc)
    expected = {
        ("symbol_removed", "legacy@DEMO_1.0"),
        ("symbol_version_removed", "moved_fn@DEMO_1.0"),
        ("symbol_version_added", "moved_fn@DEMO_2.0"),
        ("symbol_added", "added_fn@DEMO_2.0"),
        ("symbol_added", "_Z12demo_cwd_lenv@DEMO_2.0"),
        ("object_size_changed", "demo_table@DEMO_1.0"),
        ("vtable_size_changed", "_ZTV5Shape@DEMO_1.0"),
        ("soname_changed", None),
        ("glibc_floor_raised", None),
        ("libstdcxx_floor_raised", None),
    }
    assert expected <= got
    assert ("needed_added", None) in got  # librt, linked with --no-as-needed
    assert doc["filtered"].get("version-node", 0) >= 1
    assert not any(f["symbol"] and f["symbol"].startswith("DEMO_") for f in doc["findings"])
    glibc = next(f for f in doc["findings"] if f["kind"] == "glibc_floor_raised")
    assert "getrandom" in glibc["detail"] and glibc["new"] == "GLIBC_2.25"
    vt = next(f for f in doc["findings"] if f["kind"] == "vtable_size_changed")
    assert (vt["old"], vt["new"]) == (40, 48) and vt["demangled"].startswith("vtable for Shape")
    assert doc["required_bump"] == "major" and doc["status"] == "failed"


def test_deep_tier_reports_what_it_could_not_check(demo_libs):
    doc = diff_paths(demo_libs["v1"], demo_libs["v2"]).to_dict()
    assert any("no DWARF debug info" in u for u in doc["unchecked"])
    g1, g2 = h.build_demo_library("v1", debug=True), h.build_demo_library("v2", debug=True)
    assert read_elf(g1).debug_info and not read_elf(demo_libs["v1"]).debug_info
    doc = diff_paths(g1, g2).to_dict()
    if shutil.which("abidiff"):
        assert ("abidiff_incompatible", None) in kinds(doc)
    else:
        assert any("abidiff (libabigail) is not installed" in u for u in doc["unchecked"])


def test_extension_internal_symbols_are_noise(demo_exts):
    doc = diff_paths(demo_exts["v1"], demo_exts["v2"]).to_dict()
    assert doc["findings"] == []
    assert doc["filtered"]["extension-internal"] >= 2 and doc["status"] == "passed"


def test_cuda_arch_dropped(cuda_libs):
    assert read_elf(cuda_libs["v1"]).cuda_archs == ("sm_80", "sm_90")
    assert read_elf(cuda_libs["v2"]).cuda_archs == ("sm_90",)
    doc = diff_paths(cuda_libs["v1"], cuda_libs["v2"]).to_dict()
    assert kinds(doc) == {("cuda_arch_dropped", "sm_80")}
    assert doc["required_bump"] == "major"


# -- wheels, through the CLI ------------------------------------------------------------------
@pytest.fixture(scope="module")
def wheel_diff(demo_wheels, tmp_path_factory):
    out = tmp_path_factory.mktemp("diff") / "abi.json"
    proc = run_cli("abi", "diff", str(demo_wheels["v1"]), str(demo_wheels["v2"]), "--against-version",
                   "--format", "markdown", "-o", str(out), "--cell-id", "py3.11-linux-x86_64-cpu")
    return proc, json.loads(out.read_text())


def test_wheel_diff_cli(wheel_diff):
    proc, doc = wheel_diff
    assert proc.returncode == 1, proc.stderr
    validate("abi-diff", doc)
    assert doc["cell_id"] == "py3.11-linux-x86_64-cpu" and doc["actual_bump"] == "minor"
    got = kinds(doc)
    for expected in [
        ("symbol_removed", "legacy@DEMO_1.0"),
        ("cuda_arch_dropped", "sm_80"),
        ("glibc_floor_raised", None),
        ("requires_python_narrowed", None),
        ("requires_dist_floor_raised", "torch"),
        ("python_api_removed", "demo.gone"),
        ("python_api_added", "demo.fresh"),
        ("python_signature_changed", "demo.scale"),
        ("python_signature_extended", "demo.Box.grow"),
        ("torch_op_removed", "xcdemo::gone"),
        ("torch_op_added", "xcdemo::fresh"),
        ("torch_op_schema_changed", "xcdemo::scale"),
    ]:
        assert expected in got, (expected, sorted(got), doc["unchecked"])
    # the grafted, hash-renamed copy in demo.libs pairs by its unhashed name: no library churn
    assert not any(f["kind"] in ("library_removed", "library_added") for f in doc["findings"])
    # and the wheel-level tag change reads as a glibc floor raise, not a dropped wheel
    assert not any(f["kind"] == "wheel_tag_dropped" for f in doc["findings"])
    md = proc.stdout
    assert md.startswith("### ABI diff: demo 1.0.0 → demo 1.1.0") and "| 🔴 |" in md
    assert "❌ gating ABI changes" in md


def test_policy_file_changes_the_verdict(demo_wheels, tmp_path):
    policy = tmp_path / "abi-policy.yaml"
    text = "rules:\n" + "".join(f"  {k}: minor\n" for k in __import__("xcompat.abi.rules", fromlist=["x"]).default_rules())
    policy.write_text(text)
    proc = run_cli("abi", "diff", str(demo_wheels["v1"]), str(demo_wheels["v2"]), "--against-version",
                   "--policy", str(policy), "--format", "json", "--python-api", "off", "--torch-ops", "off")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["required_bump"] == "minor" and doc["status"] == "passed"


def test_snapshot_is_small_and_diffs_like_the_wheel(demo_wheels, wheel_diff, tmp_path):
    snap = tmp_path / "demo-1.0.0.abi.json.gz"
    proc = run_cli("abi", "snapshot", str(demo_wheels["v1"]), "-o", str(snap))
    assert proc.returncode == 0, proc.stderr
    import gzip

    doc = json.loads(gzip.decompress(snap.read_bytes()))
    validate("abi-snapshot", doc)
    assert doc["python_api"]["demo.scale"]["kind"] == "function"
    assert doc["torch_ops"]["xcdemo::gone"].startswith("xcdemo::gone(")
    out = tmp_path / "from-snapshot.json"
    proc = run_cli("abi", "diff", str(snap), str(demo_wheels["v2"]), "--against-version", "--format", "json", "-o", str(out))
    assert proc.returncode == 1
    from_snapshot = json.loads(out.read_text())
    assert kinds(from_snapshot) == kinds(wheel_diff[1])
    assert from_snapshot["old"]["kind"] == "snapshot"


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        (["abi", "diff", "/nonexistent/a.whl", "/nonexistent/b.whl"], r"/nonexistent/a\.whl: no such file"),
        (["abi", "diff", "{junk}", "{junk}"], r"not a wheel, ABI snapshot, ELF or Mach-O file"),
        (["abi", "diff", "{lib}", "{lib}", "--against-version"], r"has no package version"),
        (["abi", "diff", "{lib}", "{lib}", "--policy", "{badpolicy}"], r"unknown finding kind 'symbol_gone'"),
        (["abi", "diff", "{badwheel}", "{lib}"], r"not a readable wheel"),
        (["abi", "links", "{lib}", "--torch", "/nonexistent"], r"no such torch installation"),
        (["abi", "stable", "{junk}"], r"not an ELF shared object"),
        (["abi", "snapshot", "{nometa}", "-o", "{out}"], r"no \*\.dist-info/METADATA member"),
        (["abi", "diff", "{nometa}", "{lib}"], r"no \*\.dist-info/METADATA member"),
        (["abi", "diff", "{badname}", "{lib}"], r"not a valid wheel file name"),
    ],
)
def test_bad_input_is_one_clear_line_exit_2(args, pattern, tmp_path, demo_libs):
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"hello world, not a binary")
    bad = tmp_path / "bad.yaml"
    bad.write_text("symbol_gone: major\n")
    badwheel = tmp_path / "broken-1.0-py3-none-any.whl"
    badwheel.write_bytes(b"PK\x03\x04 truncated")
    import zipfile

    nometa = tmp_path / "nometa-1.0-py3-none-any.whl"
    with zipfile.ZipFile(nometa, "w") as zf:
        zf.writestr("nometa/__init__.py", "")
    badname = tmp_path / "not-a-wheel-name.whl"
    badname.write_bytes(nometa.read_bytes())
    fill = {"{junk}": str(junk), "{lib}": str(demo_libs["v1"]), "{badpolicy}": str(bad), "{badwheel}": str(badwheel),
            "{nometa}": str(nometa), "{badname}": str(badname), "{out}": str(tmp_path / "snap.gz")}
    before = sorted(p.name for p in tmp_path.iterdir())
    proc = run_cli(*[fill.get(a, a) for a in args], cwd=tmp_path)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert re.search(pattern, proc.stderr), proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing half-written


# -- torch: links and stable ABI ---------------------------------------------------------------
@pytest.fixture(scope="module")
def torch_ext(torch_lib_dir) -> Path:
    return h.build_torch_extension(torch_lib_dir)


def test_links_resolve_against_installed_torch(torch_ext, torch_lib_dir, tmp_path):
    site = torch_lib_dir.parent.parent
    out = tmp_path / "links.json"
    proc = run_cli("abi", "links", str(torch_ext), "--torch", str(site), "-o", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text())
    validate("abi-links", doc)
    (t,) = doc["torches"]
    assert t["status"] == "passed" and t["variant"] == "cpu" and t["counts"]["resolved_torch"] >= 1
    assert t["counts"]["skipped_cpython"] >= 1  # PyModule_Create2 and friends come from the interpreter
    assert doc["own_cxx_runtime"] == []


def test_links_refuse_a_torch_extension_carrying_its_own_cxx_runtime(torch_lib_dir, tmp_path):
    """Linked with -static-libstdc++ it resolves every torch symbol, loads, and then crashes
    on torch's first error message that formats a number: two C++ runtimes in one process."""
    import shutil
    import subprocess
    import sysconfig

    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed")
    source = tmp_path / "ext.cpp"
    source.write_text(h.TORCH_EXT + "\n#include <string>\nstd::string xk_count(long v) { return std::to_string(v); }\n")
    ext = tmp_path / "_static.cpython-311-x86_64-linux-gnu.so"
    proc = subprocess.run(["g++", "-std=c++17", "-O1", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}",
                           "-static-libstdc++", "-o", str(ext), str(source), f"-L{torch_lib_dir}", "-Wl,--no-as-needed",
                           "-ltorch_cpu", "-lc10"], capture_output=True, text=True, check=False)
    if proc.returncode != 0 and "stdc++" in proc.stderr:
        pytest.skip(f"g++ cannot link libstdc++ statically here: {proc.stderr.strip()[-200:]}")
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "links.json"
    run = run_cli("abi", "links", str(ext), "--torch", str(torch_lib_dir.parent.parent), "-o", str(out))
    assert run.returncode == 1, run.stdout + run.stderr
    doc = json.loads(out.read_text())
    validate("abi-links", doc)
    assert doc["status"] == "failed" and doc["torches"][0]["status"] == "passed"  # every symbol resolves
    (own,) = doc["own_cxx_runtime"]
    assert own["library"] == ext.name and "__cxa_throw" in own["finding"]
    assert "own C++ runtime" in doc["summary"]
    assert f"own C++ runtime: {ext.name} defines" in run.stdout  # the text report names it too


@pytest.mark.network
@pytest.mark.slow
def test_links_find_changed_signature_in_torch_2_14(torch_ext, torch_lib_dir, torch_2_14_wheel):
    doc = check_links(torch_ext, [torch_lib_dir.parent.parent, torch_2_14_wheel])
    validate("abi-links", doc)
    old, new = doc["torches"]
    assert old["status"] == "passed" and new["status"] == "failed"
    assert [m["demangled"] for m in new["missing"]] == ["at::toDLPackNonOwning(at::Tensor const&, DLTensor*)"]
    assert new["torch_version"].startswith("2.14.1")
    assert doc["status"] == "failed"


STABLE_EXT = r"""
#include <stdint.h>
extern "C" int aoti_torch_get_numel(void* t, int64_t* out);
namespace at { class Tensor; void toDLPackNonOwning(const Tensor&, struct DLTensor*); }
extern "C" void* keep_shim(void) { return (void*)&aoti_torch_get_numel; }
#ifdef LEAK
extern "C" void* keep_unstable(void) { return (void*)&at::toDLPackNonOwning; }
#endif
"""


def _build_stable(torch_lib_dir: Path, tmp: Path, leak: bool) -> Path:
    src = tmp / "s.cpp"
    src.write_text(STABLE_EXT)
    out = tmp / ("leaky.so" if leak else "stable.so")
    subprocess.run(["g++", "-shared", "-fPIC", "-O1", *(["-DLEAK"] if leak else []), "-o", str(out), str(src),
                    f"-L{torch_lib_dir}", "-Wl,--no-as-needed", "-ltorch_cpu", "-lc10"], check=True)
    return out


def test_stable_abi_audit(torch_ext, torch_lib_dir, tmp_path):
    doc = audit_stable(torch_ext)
    validate("abi-stable", doc)
    (lib,) = doc["libraries"]
    assert lib["verdict"] == "unstable" and doc["status"] == "passed"
    assert lib["unstable_imports"][0]["demangled"].startswith("at::toDLPackNonOwning")
    assert audit_stable(torch_ext, require_stable=True)["status"] == "failed"
    stable = _build_stable(torch_lib_dir, tmp_path, leak=False)
    leaky = _build_stable(torch_lib_dir, tmp_path, leak=True)
    assert audit_stable(stable)["libraries"][0]["verdict"] == "stable"
    proc = run_cli("abi", "stable", str(leaky), "--format", "json")
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    validate("abi-stable", doc)
    assert doc["libraries"][0]["verdict"] == "leaks-unstable"
    assert doc["libraries"][0]["counts"]["stable_c_shim"] == 1


# -- a real pair of releases, downloaded from the package index -----------------------------------
@pytest.mark.network
def test_numpy_minor_release_is_not_called_a_symbol_break():
    pair = (fetch_wheel("numpy", "2.1.3"), fetch_wheel("numpy", "2.4.0"))
    doc = diff_paths(*pair, python_api="off", torch_ops="off").to_dict()
    validate("abi-diff", doc)
    removed = [f for f in doc["findings"] if f["kind"] == "symbol_removed"]
    assert removed == []  # the generic tools report dozens here: linker and template noise
    assert doc["filtered"]["extension-internal"] > 50
    counts = doc["counts"]
    # the tag went manylinux_2_17 -> manylinux_2_27: one wheel-level floor finding; each
    # module's own rise stays within what the new tag promises and does not gate
    assert [f["library"] for f in doc["findings"] if f["kind"] == "glibc_floor_raised"] == ["(wheel)"]
    assert counts["floor_raised_within_tag"] >= 5
    # numpy's own modules' C-API target is not a dependency floor
    assert "numpy_capi_target_changed" not in counts and doc["filtered"]["numpy-own-capi-target"] >= 1


# -- the sample project, built here ----------------------------------------------------------------
def test_sample_project_v1_to_v2(sample_wheels):
    from tests.helpers.sample import sample_build_record

    wheels = sample_wheels
    # the sample's extension module exports a deliberate C API (SAMPLE_API sample_*), named
    # after its package: interface by the default convention
    doc = diff_paths(wheels["v1"], wheels["v2"], against_version=True).to_dict()
    validate("abi-diff", doc)
    got = kinds(doc)
    expected_findings = [
        ("symbol_removed", "sample_legacy_sum"),
        ("symbol_added", "sample_checksum64"),
        ("python_signature_changed", "sample_ext.scale"),
        ("python_api_added", "sample_ext.checksum64"),
        ("torch_op_schema_changed", "sample_ext::scaled_add"),
        ("requires_python_narrowed", None),
        ("glibc_floor_raised", None),
    ]
    if sample_build_record("v1")["wheels"][0]["gpu_code"]:  # built with nvcc: sm_80 is dropped in v2
        expected_findings.append(("cuda_arch_dropped", "sm_80"))
    for expected in expected_findings:
        assert expected in got, (expected, sorted(got), doc["unchecked"])
    abi3 = next(f for f in doc["findings"] if f["kind"] == "abi3_floor_raised")
    assert abi3["new"] == "3.11" and "PyObject_GetBuffer" in abi3["detail"]
    # the op library's header template instantiations are noise, not removed symbols
    assert not any(f["kind"] == "symbol_removed" and f["symbol"].startswith("_Z") for f in doc["findings"])
    assert doc["filtered"].get("vague-linkage", 0) > 0
    assert doc["actual_bump"] == "minor" and doc["status"] == "failed"
    assert doc["required_bump"] == "major"
    # a project that declares its extension interface as PyInit_* only has no C API to break
    undeclared = diff_paths(wheels["v1"], wheels["v2"], python_api="off", torch_ops="off",
                            policy={"extension_exports": []}).to_dict()
    assert ("symbol_removed", "sample_legacy_sum") not in kinds(undeclared)
    assert undeclared["filtered"]["extension-internal"] >= 1


def test_folders_of_wheels_pair_by_architecture(demo_libs, tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    for arch in ("x86_64", "aarch64"):
        h.make_wheel(old, version="1.0.0", tag=f"cp311-cp311-manylinux_2_17_{arch}", files={"demo/libdemo.so": demo_libs["v1"]})
    # the x86_64 wheel moves to manylinux_2_28 and the aarch64 wheel is no longer built
    h.make_wheel(new, version="1.0.1", tag="cp311-cp311-manylinux_2_28_x86_64", files={"demo/libdemo.so": demo_libs["v1"]})
    doc = diff_paths(old, new, python_api="off", torch_ops="off", against_version=True).to_dict()
    validate("abi-diff", doc)
    got = kinds(doc)
    assert ("wheel_tag_dropped", None) in got and ("glibc_floor_raised", None) in got
    dropped = next(f for f in doc["findings"] if f["kind"] == "wheel_tag_dropped")
    assert "aarch64" in dropped["detail"]
    # x86_64/demo/libdemo.so is paired across the floor change; only aarch64's copy is gone
    assert [f["library"] for f in doc["findings"] if f["kind"] == "library_removed"] == ["aarch64/demo/libdemo.so"]
    assert doc["actual_bump"] == "patch" and doc["status"] == "failed"


def test_utf8_symbol_names_are_read_as_utf8(tmp_path):
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    src = tmp_path / "u.c"
    src.write_text("int caf\u00e9_count(void) { return 1; }\nint plain(void) { return 2; }\n", encoding="utf-8")
    out = tmp_path / "libu.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(out), str(src)], check=True)
    exports = read_elf(out).exports
    assert "caf\u00e9_count" in exports and "plain" in exports


def test_markdown_goes_to_the_github_job_summary(demo_libs, tmp_path):
    summary = tmp_path / "summary.md"
    env = {**os.environ, "GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}
    proc = subprocess.run([*XCOMPAT, "abi", "diff", str(demo_libs["v1"]), str(demo_libs["v2"]), "--format", "json"],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["kind"] == "abi"
    text = summary.read_text()
    assert text.startswith("### ABI diff:") and "`symbol_removed`" in text
    assert "::error::ABI check failed" in proc.stderr


@pytest.mark.network
@pytest.mark.slow
def test_links_torchvision_wheel_against_its_pin_and_a_newer_torch(torch_2_14_wheel):
    doc = check_links(fetch_wheel("torchvision", "0.28.0"), [torch_2_14_wheel])
    validate("abi-links", doc)
    assert doc["declared_requirement"] == "torch==2.13.0"
    (t,) = doc["torches"]
    assert t["allowed_by_requirement"] is False and t["variant"] == "cuda"
    assert {m["demangled"] for m in t["missing"]} == {
        "c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, unsigned int, bool)"}
    assert any("RPATH folder" in u for u in t["unchecked"])  # the nvidia wheels are not installed here
