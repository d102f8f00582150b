"""Parsing valgrind XML and compute-sanitizer reports into one finding format, and deduplication."""

from __future__ import annotations

from pathlib import Path

import pytest

from xcompat.errors import InputError
from xcompat.isolate.sanitizers import (
    Finding,
    attribute,
    dedupe,
    outcome_for,
    parse_compute_sanitizer,
    parse_valgrind_xml,
    subtract_baseline,
)

# compute-sanitizer 13.x memcheck output for an out-of-bounds kernel write, the launch
# failure it causes, and a leaked cudaMalloc (layout as the tool prints it).
SANITIZER_REPORT = """\
========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at scaled_add_kernel(const float *, const float *, float, int, float *, long)+0x1b0 in /src/sample-ext/csrc/ops_cuda.cu:14
=========     by thread (255,0,0) in block (3,0,0)
=========     Access at 0x7f3a5e000400 is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7f3a5e000000 of size 1024 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: [0x2f2a15] in libcuda.so.1
=========         Host Frame: cudaLaunchKernel [0x7f1d3] in libcudart.so.13
=========         Host Frame: sample_scaled_add_cuda_launch in /src/sample-ext/csrc/ops_cuda.cu:30 [0x1c9e] in libsample_cuda.so
=========         Host Frame: scaled_add_impl_cuda(at::Tensor const&, at::Tensor const&, double, bool) [0x2d31] in _ops.so
=========
========= Invalid __global__ write of size 4 bytes
=========     at scaled_add_kernel(const float *, const float *, float, int, float *, long)+0x1b0 in /src/sample-ext/csrc/ops_cuda.cu:14
=========     by thread (254,0,0) in block (3,0,0)
=========     Access at 0x7f3a5e0003fc is out of bounds
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: cudaLaunchKernel [0x7f1d3] in libcudart.so.13
=========
========= Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure" on CUDA API call to cudaStreamSynchronize.
=========     Saved host backtrace up to driver entry point at error
=========         Host Frame: [0x333c5a] in libcuda.so.1
=========         Host Frame: cudaStreamSynchronize [0x5a3b4] in libcudart.so.13
=========
========= Leaked 4096 bytes at 0x7f3a5e200000
=========     Saved host backtrace up to driver entry point at allocation time
=========         Host Frame: [0x2a1f3c] in libcuda.so.1
=========         Host Frame: cudaMalloc [0x51a2e] in libcudart.so.13
=========         Host Frame: leaky_alloc(unsigned long) [0x1d40] in libsample_cuda.so
=========
========= LEAK SUMMARY: 4096 bytes leaked in 1 allocations
========= ERROR SUMMARY: 4 errors
"""


def _frame(fn: str, file: str | None = None, line: int | None = None, obj: str = "/usr/lib/libx.so") -> str:
    where = f"<dir>/src</dir><file>{file}</file><line>{line}</line>" if file else ""
    return f"<frame><ip>0x4848</ip><obj>{obj}</obj><fn>{fn}</fn>{where}</frame>"


def _error(kind: str, what: str, frames: list[str], leaked: int | None = None) -> str:
    if leaked is not None:
        body = f"<xwhat><text>{what}</text><leakedbytes>{leaked}</leakedbytes><leakedblocks>1</leakedblocks></xwhat>"
    else:
        body = f"<what>{what}</what>"
    return f"<error><unique>0x1</unique><tid>1</tid><kind>{kind}</kind>{body}<stack>{''.join(frames)}</stack></error>"


def _msg(text: str) -> str:
    return f"<clientmsg><tid>1</tid><text>{text}\n</text></clientmsg>"


VALGRIND_XML = (
    '<?xml version="1.0"?>\n<valgrindoutput><protocolversion>4</protocolversion><tool>memcheck</tool>'
    # Interpreter start-up: baseline.
    + _error(
        "Leak_DefinitelyLost",
        "19 bytes in 1 blocks are definitely lost",
        [_frame("malloc"), _frame("PyUnicode_New")],
        19,
    )
    + _msg("xcompat-start tests/test_a.py::test_leaky")
    + _error(
        "Leak_DefinitelyLost",
        "4,096 (+4,096) bytes in 1 (+1) blocks are definitely lost in loss record 7 of 90",
        [
            _frame("malloc", "vg_replace_malloc.c", 381),
            _frame("make_buffer", "ext.c", 12),
            _frame("ext_call", "ext.c", 40),
        ],
        4096,
    )
    + _error("Leak_PossiblyLost", "64 bytes possibly lost", [_frame("malloc")], 64)
    + _msg("xcompat-end tests/test_a.py::test_leaky")
    + _msg("xcompat-start tests/test_a.py::test_oob")
    + _error(
        "InvalidRead",
        "Invalid read of size 4",
        [_frame("sum_values", "ext.c", 77), _frame("ext_sum", "ext.c", 90)],
    )
    + _msg("xcompat-end tests/test_a.py::test_oob")
    + "</valgrindoutput>\n"
)


def test_compute_sanitizer_report_becomes_findings() -> None:
    findings = parse_compute_sanitizer("report.txt", text=SANITIZER_REPORT)
    assert [f.category for f in findings] == ["invalid-write", "invalid-write", "api-error", "leak"]
    write = findings[0]
    assert write.tool == "compute-sanitizer" and write.bytes == 4
    assert write.frames[0] == "scaled_add_kernel (ops_cuda.cu:14)"
    assert "sample_scaled_add_cuda_launch (ops_cuda.cu:30)" in write.frames
    assert "scaled_add_impl_cuda" in write.frames
    leak = findings[3]
    assert leak.bytes == 4096 and leak.frames[-1] == "leaky_alloc"
    assert "cudaErrorLaunchFailure" in findings[2].summary
    # The two writes from different threads are one bug.
    merged = dedupe(findings)
    assert len(merged) == 3 and merged[0].count == 2 and merged[0].bytes == 8


def test_compute_sanitizer_with_no_errors() -> None:
    clean = "========= COMPUTE-SANITIZER\n========= LEAK SUMMARY: 0 bytes leaked in 0 allocations\n========= ERROR SUMMARY: 0 errors\n"
    assert parse_compute_sanitizer("r.txt", text=clean) == []


def test_compute_sanitizer_rejects_other_text(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    path.write_text("Traceback (most recent call last):\n  boom\n")
    with pytest.raises(InputError) as err:
        parse_compute_sanitizer(path)
    assert str(path) in str(err.value) and "not a compute-sanitizer report" in str(err.value)


def test_valgrind_findings_are_attributed_to_tests() -> None:
    pairs = parse_valgrind_xml("vg.xml", text=VALGRIND_XML)
    per_test = attribute(pairs)
    assert set(per_test) == {"tests/test_a.py::test_leaky", "tests/test_a.py::test_oob"}
    (leak,) = per_test["tests/test_a.py::test_leaky"]  # "possibly lost" is not reported
    assert leak.category == "leak" and leak.bytes == 4096 and leak.kind == "Leak_DefinitelyLost"
    assert leak.frames[:2] == ("malloc (vg_replace_malloc.c:381)", "make_buffer (ext.c:12)")
    (oob,) = per_test["tests/test_a.py::test_oob"]
    assert oob.category == "invalid-read" and oob.summary == "Invalid read of size 4"
    # The start-up leak exists in the file but belongs to no test.
    assert any(marker is None and f.bytes == 19 for marker, f in pairs)


def test_truncated_valgrind_xml_keeps_what_parsed() -> None:
    cut = (
        VALGRIND_XML[: VALGRIND_XML.index("<error><unique>0x1</unique><tid>1</tid><kind>InvalidRead")]
        + "<error><uni"
    )
    per_test = attribute(parse_valgrind_xml("vg.xml", text=cut))
    assert list(per_test) == ["tests/test_a.py::test_leaky"]


@pytest.mark.parametrize("text", ["", "not xml at all", "<?xml version='1.0'?><other/>"])
def test_malformed_valgrind_output_is_an_input_error(text: str) -> None:
    with pytest.raises(InputError) as err:
        parse_valgrind_xml("run/vg.xml", text=text)
    assert "run/vg.xml" in str(err.value) and "--xml=yes" in str(err.value)


def test_dedupe_across_tests_and_tools() -> None:
    frames = ("malloc (x.c:1)", "make_buffer (ext.c:12)", "ext_call (ext.c:40)")
    a = Finding(
        tool="valgrind",
        category="leak",
        kind="Leak_DefinitelyLost",
        summary="a",
        bytes=10,
        frames=frames,
        tests=("t1",),
    )
    b = Finding(
        tool="valgrind",
        category="leak",
        kind="Leak_DefinitelyLost",
        summary="b",
        bytes=10,
        frames=frames,
        tests=("t2",),
    )
    c = Finding(
        tool="compute-sanitizer",
        category="leak",
        kind="Leaked",
        summary="c",
        bytes=5,
        frames=("cudaMalloc", "make_buffer", "ext_call"),
        tests=("t2",),
    )
    other = Finding(tool="valgrind", category="invalid-read", kind="InvalidRead", summary="d", frames=frames)
    merged = dedupe([a, b, c, other])
    assert len(merged) == 2
    leak = merged[0].to_dict()
    assert leak["count"] == 3 and leak["bytes"] == 25 and leak["tests"] == ["t1", "t2"]
    assert leak["tools"] == ["compute-sanitizer", "valgrind"]
    assert merged[1].category == "invalid-read"


def test_baseline_subtraction_and_outcomes() -> None:
    base = Finding(
        tool="valgrind", category="leak", kind="k", summary="s", frames=("malloc", "PyUnicode_New")
    )
    new = Finding(tool="valgrind", category="leak", kind="k", summary="s", frames=("malloc", "make_buffer"))
    assert subtract_baseline([base, new], [base]) == [new]
    assert outcome_for([new], "passed") == "leaked"
    bad = Finding(tool="valgrind", category="invalid-write", kind="k", summary="s", frames=("f",))
    assert outcome_for([new, bad], "passed") == "failed"
    assert outcome_for([bad], "crashed") == "crashed"
    assert outcome_for([], "passed") == "passed"
