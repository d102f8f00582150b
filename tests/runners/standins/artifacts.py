"""upload-artifact / download-artifact v4 over a local folder (see README.md beside this file).

Inputs arrive as STANDIN_* variables; the store is $XCOMPAT_STANDIN_ARTIFACTS/<run id>/<name>/.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import shutil
import sys
from pathlib import Path


def fail(message: str) -> None:
    print(f"::error::{message}")
    raise SystemExit(1)


def store(run_id: str) -> Path:
    return Path(os.environ["XCOMPAT_STANDIN_ARTIFACTS"]) / run_id


def output(name: str, value: str) -> None:
    with open(os.environ["GITHUB_OUTPUT"], "a", encoding="utf-8") as fh:
        fh.write(f"{name}={value}\n")


def upload() -> None:
    name = os.environ["STANDIN_NAME"]
    hidden = os.environ.get("STANDIN_HIDDEN") == "true"
    files: dict[Path, None] = {}
    roots: list[Path] = []
    for line in os.environ["STANDIN_PATH"].splitlines():
        line = line.strip()
        if not line or line.startswith("!"):
            continue
        matches = glob.glob(line, recursive=True)
        for match in sorted(matches):
            path = Path(match).resolve()
            if path.is_dir():
                roots.append(path)
                for child in sorted(path.rglob("*")):
                    parts = child.relative_to(path).parts
                    if child.is_file() and (hidden or not any(p.startswith(".") for p in parts)):
                        files[child] = None
            elif path.is_file():
                roots.append(path.parent)
                files[path] = None
    if not files:
        mode = os.environ.get("STANDIN_IF_NO_FILES", "warn")
        message = f"no files were found with the provided path: {os.environ['STANDIN_PATH'].strip()}"
        if mode == "error":
            fail(message)
        print(f"::warning::{message}" if mode == "warn" else message)
        return
    # v4 strips the least common ancestor of everything matched.
    base = Path(os.path.commonpath([str(r) for r in roots]))
    target = store(os.environ["GITHUB_RUN_ID"]) / name
    if target.exists():
        if os.environ.get("STANDIN_OVERWRITE") != "true":
            fail(f"an artifact named {name!r} already exists in this run")
        shutil.rmtree(target)
    for path in files:
        dest = target / path.relative_to(base)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, dest)
    print(f"uploaded {len(files)} file(s) as {name!r}")
    output("artifact-id", str(abs(hash(name)) % 10**8))


def download() -> None:
    run_id = os.environ.get("STANDIN_RUN_ID") or os.environ["GITHUB_RUN_ID"]
    if os.environ.get("STANDIN_RUN_ID") and not os.environ.get("STANDIN_TOKEN"):
        fail("run-id needs github-token")
    runs = store(run_id)
    names = sorted(p.name for p in runs.iterdir()) if runs.is_dir() else []
    destination = Path(os.environ.get("STANDIN_PATH") or ".")
    if os.environ.get("STANDIN_NAME"):
        if os.environ["STANDIN_NAME"] not in names:
            fail(f"unable to download artifact(s): artifact not found: {os.environ['STANDIN_NAME']}")
        chosen, merge = [os.environ["STANDIN_NAME"]], True
    else:
        pattern = os.environ.get("STANDIN_PATTERN") or "*"
        chosen = [n for n in names if fnmatch.fnmatchcase(n, pattern)]
        merge = os.environ.get("STANDIN_MERGE") == "true"
    for name in chosen:
        shutil.copytree(runs / name, destination if merge else destination / name, dirs_exist_ok=True)
    print(f"downloaded {len(chosen)} artifact(s) of run {run_id} into {destination}")
    output("download-path", str(destination.resolve()))


if __name__ == "__main__":
    {"upload": upload, "download": download}[sys.argv[1]]()
