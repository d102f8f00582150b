"""Benchmark: merging 64 cells' coverage of a ~2,000-file project.

Generates one synthetic project's data for 64 matrix cells, from the same random line
data in three forms:

* coverage.py data files (written through ``coverage.CoverageData``) for 1,400 Python files;
* gcovr JSON tracefiles for 600 C/C++/CUDA files;
* xcompat cell artifacts (what ``xcompat coverage collect`` writes) holding both.

Then times, in the same run:

* ``coverage combine`` of the 64 data files (no report), and
* ``gcovr --add-tracefile`` x 64 merged into one JSON report,
* ``xcompat coverage merge`` of the 64 artifacts (Cobertura XML + JSON + Markdown), in process
  through the same code the command runs.

Prints the times and the ratio of xcompat to the two tools together (< 1 is faster).
Usage: python benchmarks/coverage_merge.py [--cells 64] [--py-files 1400] [--native-files 600]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NATIVE_SUFFIXES = (".c", ".cpp", ".cu", ".h")


def generate(
    root: Path, cells: int, py_files: int, native_files: int, seed: int = 7
) -> dict[str, list[Path]]:
    from coverage import CoverageData

    rng = random.Random(seed)
    py_paths = [f"src/pkg{i % 40}/mod{i}.py" for i in range(py_files)]
    native_paths = [
        f"csrc/part{i % 20}/unit{i}{NATIVE_SUFFIXES[i % len(NATIVE_SUFFIXES)]}" for i in range(native_files)
    ]
    statements = {p: sorted(rng.sample(range(1, 160), rng.randint(20, 100))) for p in py_paths + native_paths}
    out: dict[str, list[Path]] = {"coverage": [], "gcovr": [], "xcompat": []}
    checkout = "/builds/group/project"
    for c in range(cells):
        cell_rng = random.Random(seed * 1000 + c)
        files: dict[str, dict] = {}
        py_lines: dict[str, list[int]] = {}
        for p in py_paths:
            lines = statements[p]
            hits = [1 if cell_rng.random() < 0.55 else 0 for _ in lines]
            files[p] = {"language": "python", "origin": "coverage.py", "lines": lines, "hits": hits}
            executed = [n for n, h in zip(lines, hits) if h]
            if executed:
                py_lines[f"{checkout}/{p}"] = executed
        gcovr_files = []
        for p in native_paths:
            lines = list(statements[p])
            if c % 8 == 0 and p.endswith(".h"):
                lines = sorted(set(lines) | {161})  # another compiler in this cell: one more line
            hits = [cell_rng.choice((0, 0, 1, 3, 12)) for _ in lines]
            lang = {"c": "c", "h": "c", "cpp": "cpp", "cu": "cuda"}[p.rsplit(".", 1)[1]]
            files[p] = {"language": lang, "origin": "gcovr", "lines": lines, "hits": hits}
            gcovr_files.append(
                {
                    "file": p,
                    "functions": [],
                    "lines": [{"line_number": n, "count": h, "branches": []} for n, h in zip(lines, hits)],
                }
            )
        data = CoverageData(basename=str(root / f".coverage.cell{c}"))
        data.add_lines(py_lines)
        data.write()
        out["coverage"].append(root / f".coverage.cell{c}")
        gpath = root / "gcovr" / f"cell{c}.json"
        gpath.parent.mkdir(exist_ok=True)
        gpath.write_text(json.dumps({"gcovr/format_version": "0.15", "files": gcovr_files}))
        out["gcovr"].append(gpath)
        artifact = {
            "version": 1,
            "kind": "coverage",
            "cell_id": f"cell{c}",
            "status": "passed",
            "summary": "",
            "source_root": checkout,
            "tools": {},
            "files": files,
            "unmapped": [],
            "unmapped_total": 0,
            "warnings": [],
            "errors": [],
        }
        apath = root / "cells" / f"cell{c}.json"
        apath.parent.mkdir(exist_ok=True)
        apath.write_text(json.dumps(artifact, separators=(",", ":")))
        out["xcompat"].append(apath)
    return out


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=64)
    parser.add_argument("--py-files", type=int, default=1400)
    parser.add_argument("--native-files", type=int, default=600)
    args = parser.parse_args()

    from xcompat.coverage.report import MergeOptions, merge_coverage
    from xcompat.jsonio import atomic_write_text, write_json

    with tempfile.TemporaryDirectory(prefix="xcompat-bench-cov-") as tmp:
        root = Path(tmp)
        t = timed(lambda: generate(root, args.cells, args.py_files, args.native_files))
        data = {
            k: sorted((root / d).glob(g))
            for k, d, g in (
                ("coverage", ".", ".coverage.cell*"),
                ("gcovr", "gcovr", "*.json"),
                ("xcompat", "cells", "*.json"),
            )
        }
        size = sum(p.stat().st_size for p in data["xcompat"]) / 1e6
        print(
            f"generated {args.cells} cells x {args.py_files + args.native_files} files in {t:.1f}s "
            f"(xcompat artifacts {size:.1f} MB)"
        )

        def coverage_combine() -> None:
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "coverage",
                    "combine",
                    "--keep",
                    "-q",
                    f"--data-file={root / '.coverage.combined'}",
                    *map(str, data["coverage"]),
                ],
                check=True,
                cwd=root,
            )

        def gcovr_merge() -> None:
            cmd = [sys.executable, "-m", "gcovr", "-r", str(root)]
            for p in data["gcovr"]:
                cmd += ["-a", str(p)]
            cmd += ["--json", str(root / "gcovr-merged.json")]
            subprocess.run(cmd, check=True, cwd=root, capture_output=True)

        def xcompat_merge() -> None:
            report = merge_coverage(MergeOptions(cell_files=tuple(data["xcompat"]), repo=root))
            out = root / "xcompat-out"
            write_json(out / "coverage.json", report.document, schema="coverage")
            atomic_write_text(out / "coverage.xml", report.cobertura)
            atomic_write_text(out / "coverage.md", report.markdown)
            assert report.document["totals"]["files"] == args.py_files + args.native_files

        t_cov = timed(coverage_combine)
        print(f"coverage combine        {t_cov:8.2f} s")
        t_gcovr = timed(gcovr_merge)
        print(f"gcovr --add-tracefile   {t_gcovr:8.2f} s")
        t_x = timed(xcompat_merge)
        print(f"xcompat coverage merge  {t_x:8.2f} s  (Cobertura + JSON + Markdown)")
        both = t_cov + t_gcovr
        print(
            f"ratio xcompat / (coverage combine + gcovr) = {t_x / both:.3f}  ({both / t_x:.1f}x faster)"
            if t_x < both
            else f"ratio xcompat / (coverage combine + gcovr) = {t_x / both:.3f}  (slower)"
        )
        print(f"ratio xcompat / coverage combine = {t_x / t_cov:.3f}; xcompat / gcovr = {t_x / t_gcovr:.3f}")
        return 0 if t_x <= both else 1


if __name__ == "__main__":
    raise SystemExit(main())
