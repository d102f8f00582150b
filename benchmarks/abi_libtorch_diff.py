"""libtorch_cpu.so 2.13.0 -> 2.14.1 (~75,000 exported symbols each).

Compares, in one run on this machine:
* ``xcompat abi diff`` (whole command: interpreter start, both reads, diff, demangling,
  JSON written) against ``nm -D --defined-only`` on both files (the goal: within 1.5x) and
  against libabigail's ``abidiff`` on the pair (when installed; the goal: 50x faster);
* xcompat's ELF reader against pyelftools reading the same symbol and version tables.

    python benchmarks/abi_libtorch_diff.py [--repeat N] [--abidiff-repeat N]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from abi_common import (
    LAST_CPU,
    PY,
    PYELFTOOLS_READ,
    XCOMPAT_READ,
    extract,
    interleaved_cpu_ratio,
    measure,
    reader_script,
    run,
    torch_new_wheel,
    torch_old_wheel,
    xcompat,
)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--skip-pyelftools", action="store_true")
    ap.add_argument("--skip-abidiff", action="store_true")
    ap.add_argument("--abidiff-repeat", type=int, default=1, help="abidiff runs (~20 s each)")
    args = ap.parse_args()
    old = extract(torch_old_wheel(), "torch/lib/libtorch_cpu.so", "torch-2.13.0")
    new = extract(torch_new_wheel(), "torch/lib/libtorch_cpu.so", "torch-2.14.1")
    print(f"libtorch_cpu.so: {old.stat().st_size >> 20} MiB -> {new.stat().st_size >> 20} MiB")
    print("diff of the pair:")
    nm, nm_rss = measure("nm -D --defined-only (both files)", [
        ["nm", "-D", "--defined-only", str(old)], ["nm", "-D", "--defined-only", str(new)]], args.repeat)
    ours, ours_rss = measure("xcompat abi diff --format json", [
        xcompat("abi", "diff", str(old), str(new), "--format", "json")], args.repeat)
    cpu = LAST_CPU["xcompat abi diff --format json"] / LAST_CPU["nm -D --defined-only (both files)"]
    print(f"  ratio xcompat / nm: {ours / nm:.2f}x wall, {cpu:.2f}x CPU, {ours_rss / max(nm_rss, 1):.2f}x memory "
          "(goal: within 1.5x)")
    paired, ours_cpu, nm_cpu = interleaved_cpu_ratio(
        [xcompat("abi", "diff", str(old), str(new), "--format", "json")],
        [["nm", "-D", "--defined-only", str(old)], ["nm", "-D", "--defined-only", str(new)]], args.repeat)
    print(f"  ratio xcompat / nm, the two run alternately: {paired:.2f}x CPU (median of {args.repeat} rounds; "
          f"{ours_cpu:.3f} s vs {nm_cpu:.3f} s)")
    if shutil.which("abidiff") and not args.skip_abidiff:
        measure("abidiff (libabigail)", [["abidiff", str(old), str(new)]], args.abidiff_repeat)
        ratio = LAST_CPU["abidiff (libabigail)"] / LAST_CPU["xcompat abi diff --format json"]
        print(f"  ratio abidiff / xcompat: {ratio:.0f}x CPU, against the series above (goal: at least 50x)")
        # The series above ran before abidiff, minutes earlier on a machine whose speed drifts:
        # also compare each abidiff run with xcompat runs right before and after it.
        bracketed = []
        diff_cmd = xcompat("abi", "diff", str(old), str(new), "--format", "json")
        for _ in range(args.abidiff_repeat):
            before = run(diff_cmd)[1]
            theirs = run(["abidiff", str(old), str(new)])[1]
            after = run(diff_cmd)[1]
            bracketed.append(theirs / ((before + after) / 2))
        print(f"  ratio abidiff / xcompat, xcompat run right before and after each abidiff run: "
              f"{statistics.median(bracketed):.0f}x CPU (median of {args.abidiff_repeat}; goal: at least 50x)")
    print("reading .dynsym + version tables of both files (process start included):")
    reader, _ = measure("xcompat ELF reader", [[PY, "-c", reader_script(XCOMPAT_READ), str(old), str(new)]],
                        args.repeat)
    if not args.skip_pyelftools:
        pyelf, _ = measure("pyelftools", [[PY, "-c", reader_script(PYELFTOOLS_READ), str(old), str(new)]],
                           max(1, args.repeat // 2))
        print(f"  ratio pyelftools / xcompat reader: {pyelf / reader:.1f}x wall, "
              f"{LAST_CPU['pyelftools'] / LAST_CPU['xcompat ELF reader']:.1f}x CPU")
    # in-process figure without interpreter start, for reference
    from xcompat.abi.elf import read_elf

    t = time.perf_counter()
    n = len(read_elf(old).exports) + len(read_elf(new).exports)
    print(f"  in-process read of both: {time.perf_counter() - t:.3f} s for {n} exported symbols")


if __name__ == "__main__":
    main()
