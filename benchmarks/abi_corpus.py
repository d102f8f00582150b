"""Real-wheel ABI corpus: ``xcompat abi diff`` against ``nm -D``, libabigail's ``abidiff`` and
``abicheck`` on pairs of consecutive releases, fetched with ``pip download`` into a cache.

For every pair, in one run on this machine:

* xcompat: the whole command on the two wheels (``--python-api off --torch-ops off``, the
  symbol tier), findings by kind, how many gate, CPU time and peak RSS;
* ``nm -D --defined-only``: raw removed / added defined dynamic symbols of the same library
  pairs (xcompat's pairing), the baseline every symbol tool starts from;
* ``abidiff`` (Debian ``abigail-tools``) per library pair: exit verdict (12 = incompatible),
  removed / added symbols from its summary lines, CPU time, peak RSS;
* ``abicheck compare`` (PyPI, binary-only: no headers) per library pair: verdict, breaking and
  total changes, CPU time, peak RSS.

CPU time and peak RSS are those of each child process (``wait4``), summed (CPU) or maxed
(RSS) over a pair's library pairs. This process stays small (files are compared in chunks)
because a forked child's peak RSS starts from its parent's.

Torch is compared on the registry's default (CUDA) build of both releases, so build-variant
noise is not counted as change; the external tools only read ``libtorch_cpu.so`` and
``libc10.so`` of it (``libtorch_cuda.so`` alone would take them tens of minutes).

    python benchmarks/abi_corpus.py [--only numpy,pyzmq] [--skip-tools] [--json OUT]

Needs network access to PyPI (or a mirror pip is configured for) on the first run; nothing
here runs in CI. ``abidiff`` comes from ``apt-get install abigail-tools``; ``abicheck`` is
installed into a virtual environment in the cache on first use.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import re
import subprocess
import sys
import time
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from abi_common import CACHE, PY, run, xcompat

CORPUS = CACHE / "corpus"
TOOLS = CACHE / "tools"
TOOL_TIMEOUT_S = 900
PLATFORM = "manylinux_2_28_x86_64"


@dataclass(frozen=True)
class Pair:
    label: str
    project: str
    old: str
    new: str
    tool_libs: tuple[str, ...] = ()  # only these library base names for the external tools


PAIRS = (
    Pair("numpy 2.0→2.1", "numpy", "2.0.0", "2.1.3"),
    Pair("numpy 2.4.0→2.4.1", "numpy", "2.4.0", "2.4.1"),
    Pair("pyzmq 26→27", "pyzmq", "26.4.0", "27.2.0"),
    Pair("lxml 5→6", "lxml", "5.4.0", "6.1.3"),
    Pair("pyarrow 24→25", "pyarrow", "24.0.0", "25.0.1"),
    Pair("opencv-headless 4→5", "opencv-python-headless", "4.14.0.94", "5.0.0.93"),
    Pair("torch 2.13→2.14.1 (CUDA)", "torch", "2.13.0", "2.14.1", tool_libs=("libtorch_cpu.so", "libc10.so")),
)


def fetch(project: str, version: str) -> Path:
    """The cp311 manylinux x86_64 wheel of ``project==version``, downloaded once from PyPI
    (``--isolated``: the registry's default build, not a local variant)."""
    dest = CORPUS / "wheels"
    dest.mkdir(parents=True, exist_ok=True)
    norm = re.sub(r"[-_.]+", "_", project).lower()
    for whl in dest.glob("*.whl"):
        n, v = whl.name.split("-")[:2]
        if re.sub(r"[-_.]+", "_", n).lower() == norm and v == version:
            return whl
    cmd = [PY, "-m", "pip", "--isolated", "download", "--no-deps", "--only-binary=:all:", "--python-version", "3.11",
           "--implementation", "cp", "--platform", PLATFORM, "--platform", "manylinux2014_x86_64",
           "--platform", "manylinux_2_17_x86_64", "-d", str(dest), f"{project}=={version}"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return fetch(project, version)


def unpack_native(wheel: Path) -> dict[str, Path]:
    """Pairing key (as ``abi diff`` keys libraries) -> the member unpacked into the cache."""
    from xcompat.abi.wheel import is_native_member, pairing_key

    out_dir = CORPUS / "unpacked" / wheel.stem
    done = out_dir / ".done"
    out: dict[str, Path] = {}
    with zipfile.ZipFile(wheel) as zf:
        members = [i for i in zf.infolist() if is_native_member(i.filename)]
        for info in members:
            target = out_dir / info.filename
            out[pairing_key(info.filename)] = target
            if done.exists():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as dst:
                while chunk := src.read(1 << 20):
                    dst.write(chunk)
    out_dir.mkdir(parents=True, exist_ok=True)
    done.touch()
    return {k: v for k, v in out.items() if _head(v) == b"\x7fELF"}


def _head(path: Path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(4)


@dataclass
class ToolRun:
    cpu: float = 0.0
    peak_mb: int = 0
    wall: float = 0.0
    counts: Counter = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)

    def add(self, wall: float, cpu: float, rss: int) -> None:
        self.wall += wall
        self.cpu += cpu
        self.peak_mb = max(self.peak_mb, rss)


def timed(cmd: list[str], out_path: Path | None = None, env=None) -> tuple[float, float, int, int]:
    if out_path is None:
        return run(cmd, env=env)
    with open(out_path, "w") as fh:
        return run(cmd, stdout=fh, env=env)


def nm_symbols(path: Path, tr: ToolRun) -> set[str]:
    out = CORPUS / "tmp-nm.txt"
    wall, cpu, rss, _rc = timed(["nm", "-D", "--defined-only", "--with-symbol-versions", str(path)], out)
    tr.add(wall, cpu, rss)
    syms = set()
    for line in out.read_text(errors="replace").splitlines():
        parts = line.split()
        if len(parts) >= 3:
            syms.add(parts[2])
    return syms


_ABIDIFF_SUMMARY = re.compile(r"^(Function|Variable)s? (symbols )?changes summary: (\d+) Removed(?:, (\d+) Changed)?, (\d+) Added",
                              re.MULTILINE)


def abidiff_pair(old: Path, new: Path, tr: ToolRun) -> None:
    out = CORPUS / "tmp-abidiff.txt"
    try:
        wall, cpu, rss, rc = timed(["timeout", str(TOOL_TIMEOUT_S), "abidiff", str(old), str(new)], out)
    except FileNotFoundError:
        tr.notes.append("abidiff not installed")
        return
    tr.add(wall, cpu, rss)
    if rc == 124:
        tr.notes.append(f"{new.name}: timeout")
        return
    tr.counts["pairs"] += 1
    if rc & 8:
        tr.counts["incompatible(12)"] += 1
    elif rc & 4:
        tr.counts["changed(4)"] += 1
    elif rc & 3:
        tr.counts["error"] += 1
    for m in _ABIDIFF_SUMMARY.finditer(out.read_text(errors="replace")):
        tr.counts["removed"] += int(m.group(3))
        tr.counts["added"] += int(m.group(5))
        tr.counts["changed"] += int(m.group(4) or 0)


def abicheck_bin() -> Path | None:
    exe = TOOLS / "venv" / "bin" / "abicheck"
    if exe.exists():
        return exe
    try:
        subprocess.run([sys.executable, "-m", "venv", str(TOOLS / "venv")], check=True)
        subprocess.run([str(TOOLS / "venv" / "bin" / "pip"), "install", "--quiet", "abicheck==0.7.0"], check=True)
    except subprocess.CalledProcessError:
        return None
    return exe if exe.exists() else None


def abicheck_pair(old: Path, new: Path, tr: ToolRun) -> None:
    exe = abicheck_bin()
    if exe is None:
        tr.notes.append("abicheck could not be installed")
        return
    report = CORPUS / "tmp-abicheck.json"
    report.unlink(missing_ok=True)
    wall, cpu, rss, rc = timed(["timeout", str(TOOL_TIMEOUT_S), str(exe), "compare", str(old), str(new),
                                "-o", f"json={report}"], CORPUS / "tmp-abicheck.txt")
    tr.add(wall, cpu, rss)
    if rc == 124:
        tr.notes.append(f"{new.name}: timeout")
        return
    tr.counts["pairs"] += 1
    if rc == 4:
        tr.counts["BREAKING"] += 1
    try:
        doc = json.loads(report.read_text())
    except (OSError, json.JSONDecodeError):
        tr.notes.append(f"{new.name}: no JSON report (exit {rc})")
        return
    for ch in doc.get("changes") or []:
        tr.counts[f"{ch.get('severity')}"] += 1


def run_pair(pair: Pair, skip_tools: bool) -> dict:
    old_whl, new_whl = fetch(pair.project, pair.old), fetch(pair.project, pair.new)
    doc_path = CORPUS / f"xcompat-{pair.project}-{pair.old}-{pair.new}.json"
    x = ToolRun()
    wall, cpu, rss, _rc = timed(xcompat("abi", "diff", str(old_whl), str(new_whl), "--format", "json",
                                       "--python-api", "off", "--torch-ops", "off"), doc_path)
    x.add(wall, cpu, rss)
    doc = json.loads(doc_path.read_text())
    kinds = Counter(f["kind"] for f in doc["findings"])
    gating_kinds = Counter()
    for f in doc["findings"]:
        if f["required_bump"] == "major":
            gating_kinds[f["kind"]] += 1
    row = {"pair": pair.label, "xcompat": {"cpu_s": round(x.cpu, 2), "peak_mb": x.peak_mb, "status": doc["status"],
                                           "gating": doc["gating"], "findings": dict(kinds),
                                           "major_by_kind": dict(gating_kinds), "filtered": doc["filtered"],
                                           "pairs": Counter(p["how"] for p in doc.get("pairs", []))}}
    old_libs, new_libs = unpack_native(old_whl), unpack_native(new_whl)
    nm, ab, ac = ToolRun(), ToolRun(), ToolRun()
    for p in doc.get("pairs", []):
        a, b = old_libs.get(p["old"]), new_libs.get(p["new"])
        if a is None or b is None:
            continue
        sa, sb = nm_symbols(a, nm), nm_symbols(b, nm)
        nm.counts["removed"] += len(sa - sb)
        nm.counts["added"] += len(sb - sa)
        nm.counts["pairs"] += 1
        if skip_tools or (pair.tool_libs and Path(p["new"]).name not in pair.tool_libs):
            continue
        if filecmp.cmp(a, b, shallow=False):
            ab.counts["identical"] += 1
            continue
        abidiff_pair(a, b, ab)
        abicheck_pair(a, b, ac)
    for name, tr in (("nm", nm), ("abidiff", ab), ("abicheck", ac)):
        row[name] = {"cpu_s": round(tr.cpu, 2), "peak_mb": tr.peak_mb, "counts": dict(tr.counts), "notes": tr.notes}
    return row


def print_table(rows: list[dict]) -> None:
    print()
    print(f"{'pair':<28} {'xcompat gating/total':>20} {'cpu s':>7} {'MB':>5} | {'nm -D rem/add':>13} {'cpu s':>6} | "
          f"{'abidiff 12/pairs rem/add':>24} {'cpu s':>7} {'MB':>5} | {'abicheck breaking/total':>23} {'cpu s':>7} {'MB':>5}")
    for r in rows:
        x, nm, ab, ac = r["xcompat"], r["nm"], r["abidiff"], r["abicheck"]
        total = sum(x["findings"].values())
        abc = ab["counts"]
        acc = ac["counts"]
        ac_total = sum(v for k, v in acc.items() if k not in ("pairs", "BREAKING"))
        print(f"{r['pair']:<28} {x['gating']:>9}/{total:<10} {x['cpu_s']:>7} {x['peak_mb']:>5} | "
              f"{nm['counts'].get('removed', 0):>6}/{nm['counts'].get('added', 0):<6} {nm['cpu_s']:>6} | "
              f"{abc.get('incompatible(12)', 0):>4}/{abc.get('pairs', 0):<3} {abc.get('removed', 0):>6}/{abc.get('added', 0):<8} "
              f"{ab['cpu_s']:>7} {ab['peak_mb']:>5} | {acc.get('breaking', 0):>10}/{ac_total:<12} {ac['cpu_s']:>7} {ac['peak_mb']:>5}")
    print()
    for r in rows:
        x = r["xcompat"]
        print(f"{r['pair']}: xcompat major by kind {x['major_by_kind']}; all {x['findings']}; filtered {x['filtered']}; "
              f"pairs {dict(x['pairs'])}")
        for tool in ("abidiff", "abicheck"):
            if r[tool]["notes"]:
                print(f"  {tool}: {'; '.join(r[tool]['notes'])}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", help="comma-separated project names")
    ap.add_argument("--skip-tools", action="store_true", help="only xcompat and nm (no abidiff / abicheck)")
    ap.add_argument("--json", help="also write the rows as JSON to this file")
    args = ap.parse_args()
    only = set(args.only.split(",")) if args.only else None
    rows = []
    for pair in PAIRS:
        if only and pair.project not in only:
            continue
        start = time.perf_counter()
        try:
            rows.append(run_pair(pair, args.skip_tools))
        except subprocess.CalledProcessError as exc:
            print(f"{pair.label}: skipped ({exc})", file=sys.stderr)
            continue
        print(f"{pair.label}: done in {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    print_table(rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=dict))


if __name__ == "__main__":
    main()
