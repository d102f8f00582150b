"""Shared helpers of the ABI benchmarks: inputs cached outside the repository, timing with
child-process peak memory, medians."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
import zipfile
from pathlib import Path

CACHE = Path(os.environ.get("XCOMPAT_BENCH_CACHE") or Path.home() / ".cache" / "xcompat-bench")
PY = sys.executable
REPO = Path(__file__).resolve().parents[1]


def released_wheel(name: str, version: str) -> Path:
    """The released wheel ``name==version`` (CPython 3.11, manylinux x86_64), fetched once with
    ``pip download`` into the test suite's download cache (``tests/helpers/wheels.py``)."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from tests.helpers.wheels import fetch_wheel

    return fetch_wheel(name, version)


def torch_old_wheel() -> Path:
    return released_wheel("torch", "2.13.0")


def torch_new_wheel() -> Path:
    return released_wheel("torch", "2.14.1")


def extract(wheel: Path, member: str, label: str) -> Path:
    """``member`` of ``wheel`` unpacked once into the benchmark cache."""
    out = CACHE / label / Path(member).name
    if out.exists():
        return out
    if not wheel.exists():
        raise SystemExit(f"benchmark input {wheel} is missing")
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as zf, zf.open(member) as src, open(f"{out}.part", "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    os.replace(f"{out}.part", out)
    return out


def compile_xcompat() -> None:
    """Byte-compile xcompat once, as ``pip install`` does: with PYTHONDONTWRITEBYTECODE set
    (or a read-only checkout) every measured process would otherwise compile its sources."""
    import compileall

    import xcompat

    compileall.compile_dir(str(Path(xcompat.__file__).parent), quiet=1)


compile_xcompat()

LAST_CPU: dict[str, float] = {}


TIME = shutil.which("time") or ("/usr/bin/time" if os.path.exists("/usr/bin/time") else None)


def run(cmd: list[str], *, stdout=subprocess.DEVNULL, env=None) -> tuple[float, float, int, int]:
    """Run ``cmd``; (wall seconds, CPU seconds incl. children, peak RSS in MB, exit code).

    The peak RSS comes from GNU ``time`` when installed: a child forked from this (possibly
    large) process starts with its parent's resident pages, and ``ru_maxrss`` survives exec,
    so ``wait4``'s figure is only an upper bound."""
    import tempfile

    start = time.perf_counter()
    with tempfile.NamedTemporaryFile("r", suffix=".maxrss") as rss_file:
        argv = [TIME, "-q", "-f", "%M", "-o", rss_file.name, *cmd] if TIME else cmd
        proc = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.DEVNULL, env=env)
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        peak = usage.ru_maxrss // 1024
        if TIME:
            text = rss_file.read().strip().splitlines()
            if text and text[-1].isdigit():
                peak = int(text[-1]) // 1024
    return wall, usage.ru_utime + usage.ru_stime, peak, os.waitstatus_to_exitcode(status)


def measure(label: str, cmds: list[list[str]], repeat: int) -> tuple[float, int]:
    """Median wall time of running ``cmds`` one after the other, and the largest peak RSS.

    The median CPU time is printed too (and kept in ``LAST_CPU[label]``): on a shared,
    busy machine it is the steadier of the two figures."""
    times, cpus, peak = [], [], 0
    for cmd in cmds:
        run(cmd)  # warm-up (page cache, bytecode)
    for _ in range(repeat):
        total = cpu_total = 0.0
        for cmd in cmds:
            wall, cpu, rss, _rc = run(cmd)
            total += wall
            cpu_total += cpu
            peak = max(peak, rss)
        times.append(total)
        cpus.append(cpu_total)
    med = statistics.median(times)
    LAST_CPU[label] = statistics.median(cpus)
    print(f"  {label:<46} {med:8.3f} s wall (min {min(times):.3f}, n={repeat})  "
          f"{LAST_CPU[label]:7.3f} s CPU  peak RSS {peak:5d} MB")
    return med, peak


def xcompat(*args: str) -> list[str]:
    return [PY, "-m", "xcompat", *args]


def interleaved_cpu_ratio(cmds_a: list[list[str]], cmds_b: list[list[str]], repeat: int) -> tuple[float, float, float]:
    """Median of per-round CPU ratios a/b, running a and b alternately in each round, so that a
    change in the machine's load between two series cannot bias the ratio; also the median
    CPU seconds of a and of b."""
    ratios, cpu_a, cpu_b = [], [], []
    for _ in range(repeat):
        a = sum(run(cmd)[1] for cmd in cmds_a)
        b = sum(run(cmd)[1] for cmd in cmds_b)
        ratios.append(a / b)
        cpu_a.append(a)
        cpu_b.append(b)
    return statistics.median(ratios), statistics.median(cpu_a), statistics.median(cpu_b)


# One task done by each ELF reader, for the reader benchmarks: every exported symbol of .dynsym
# (defined; GLOBAL, WEAK or GNU_UNIQUE binding; default or protected visibility; named) keyed
# by name@version with its type and size, the version tables that key needs, and the
# DT_NEEDED entries of .dynamic. ``read(path)`` returns the number of exports, so the two
# readers can be checked to agree on every file they are timed on.
XCOMPAT_READ = r'''
from xcompat.abi.elf import read_elf


def read(path):
    return len(read_elf(path, want_fatbin=False).exports)
'''

PYELFTOOLS_READ = r'''
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerDefSection, GNUVerNeedSection, GNUVerSymSection

_BINDS = ("STB_GLOBAL", "STB_WEAK", "STB_GNU_UNIQUE", "STB_LOOS")  # pyelftools names GNU_UNIQUE STB_LOOS
_VISIBLE = ("STV_DEFAULT", "STV_PROTECTED")


def read(path):
    with open(path, "rb") as fh:
        elf = ELFFile(fh)
        names, needed, versym = {}, [], None
        for s in elf.iter_sections():
            if isinstance(s, GNUVerSymSection) and versym is None:
                versym = s
            elif isinstance(s, GNUVerDefSection):
                for vd, auxs in s.iter_versions():
                    names[vd["vd_ndx"]] = next(auxs).name
            elif isinstance(s, GNUVerNeedSection):
                for _vn, auxs in s.iter_versions():
                    for aux in auxs:
                        names[aux["vna_other"]] = aux.name
            elif isinstance(s, DynamicSection) and s.name == ".dynamic":
                needed = [t.needed for t in s.iter_tags() if t.entry.d_tag == "DT_NEEDED"]
        out = {}
        for i, sym in enumerate(elf.get_section_by_name(".dynsym").iter_symbols()):
            if (sym["st_shndx"] == "SHN_UNDEF" or sym["st_info"]["bind"] not in _BINDS
                    or sym["st_other"]["visibility"] not in _VISIBLE or not sym.name):
                continue
            v = versym.get_symbol(i)["ndx"] if versym else 0
            key = sym.name if not isinstance(v, int) or (v & 0x7FFF) <= 1 else sym.name + "@" + names.get(v & 0x7FFF, "")
            out[key] = (sym["st_info"]["type"], sym["st_size"])
        return len(out)
'''


def reader_script(source: str) -> str:
    """A ``python -c`` program: ``source``'s ``read`` on each path of its arguments."""
    return source + "\nimport sys\nfor _path in sys.argv[1:]:\n    print(_path, read(_path))\n"


def load_reader(source: str):
    """``source``'s ``read`` function, to time it in this process."""
    namespace: dict = {}
    exec(compile(source, "<reader>", "exec"), namespace)  # noqa: S102 - the benchmark's own source text
    return namespace["read"]
