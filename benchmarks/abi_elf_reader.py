"""xcompat's ELF reader (``xcompat.abi.elf``) against pyelftools, on the same files.

Why the reader is hand-written on ``mmap`` + ``struct``: both readers do the same task
(``abi_common.XCOMPAT_READ`` / ``PYELFTOOLS_READ``: every exported symbol of ``.dynsym``
keyed by name@version with type and size, the version tables, ``DT_NEEDED``), and the
benchmark first checks that they find the same number of exports in every file. Then:

* in this process, each reader alone (no interpreter start): median CPU seconds per file;
* whole processes (interpreter start and imports included): wall, CPU and peak RSS of each
  series, and the median of per-round CPU ratios with the two run alternately.

Files: the ones given, or by default ``libtorch_cpu.so`` and ``libc10.so`` of the torch
installed for this interpreter (found without importing torch), else ``libc.so.6`` and
``libstdc++.so.6``.

    python benchmarks/abi_elf_reader.py [FILE ...] [--repeat N]
"""

from __future__ import annotations

import argparse
import importlib.util
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
    interleaved_cpu_ratio,
    load_reader,
    measure,
    reader_script,
)

SYSTEM_LIBS = ("/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
               "/lib/aarch64-linux-gnu/libc.so.6", "/usr/lib/aarch64-linux-gnu/libstdc++.so.6",
               "/lib64/libc.so.6", "/usr/lib64/libstdc++.so.6")


def default_files() -> list[Path]:
    spec = importlib.util.find_spec("torch")
    if spec is not None and spec.origin:
        lib = Path(spec.origin).parent / "lib"
        found = [lib / n for n in ("libtorch_cpu.so", "libc10.so") if (lib / n).is_file()]
        if found:
            return found
    return [Path(p) for p in SYSTEM_LIBS if Path(p).is_file()]


def in_process(read, path: Path, repeat: int) -> float:
    """Median CPU seconds of ``read(path)`` in this process."""
    times = []
    for _ in range(repeat):
        start = time.process_time()
        read(str(path))
        times.append(time.process_time() - start)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    files = args.files or default_files()
    if not files:
        raise SystemExit("no ELF files to read: name some")
    ours, theirs = load_reader(XCOMPAT_READ), load_reader(PYELFTOOLS_READ)
    print("in one process, each reader alone (median CPU seconds):")
    total_ours = total_theirs = 0.0
    for path in files:
        n_ours, n_theirs = ours(str(path)), theirs(str(path))
        if n_ours != n_theirs:
            raise SystemExit(f"{path}: the readers disagree ({n_ours} exports against pyelftools' {n_theirs})")
        a = in_process(ours, path, args.repeat)
        b = in_process(theirs, path, max(1, args.repeat // 2))
        total_ours += a
        total_theirs += b
        print(f"  {path.name:<24} {n_ours:7d} exports  xcompat {a:7.3f} s  pyelftools {b:7.3f} s  "
              f"ratio pyelftools / xcompat {b / a:5.1f}x")
    print(f"  all files: ratio pyelftools / xcompat {total_theirs / total_ours:.1f}x CPU")
    print("whole processes, interpreter start included:")
    names = [str(p) for p in files]
    ours_cmd = [[PY, "-c", reader_script(XCOMPAT_READ), *names]]
    theirs_cmd = [[PY, "-c", reader_script(PYELFTOOLS_READ), *names]]
    wall_ours, _ = measure("xcompat ELF reader", ours_cmd, args.repeat)
    wall_theirs, _ = measure("pyelftools", theirs_cmd, max(1, args.repeat // 2))
    print(f"  ratio pyelftools / xcompat: {wall_theirs / wall_ours:.1f}x wall, "
          f"{LAST_CPU['pyelftools'] / LAST_CPU['xcompat ELF reader']:.1f}x CPU (series)")
    ratio, cpu_theirs, cpu_ours = interleaved_cpu_ratio(theirs_cmd, ours_cmd, args.repeat)
    print(f"  ratio pyelftools / xcompat, the two run alternately: {ratio:.1f}x CPU (median of {args.repeat} "
          f"rounds; {cpu_theirs:.2f} s against {cpu_ours:.2f} s)")


if __name__ == "__main__":
    main()
