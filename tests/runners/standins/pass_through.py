"""Stand-in for steps that only publish or attest (see README.md beside this file).

Appends one JSON line to $XCOMPAT_STANDIN_ARTIFACTS/calls/<run id>.jsonl: the step's inputs and,
for each file it would have sent, its name and SHA-256, so a test can compare what would have
been published with what the gate approved.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
from pathlib import Path


def main() -> None:
    subject = os.environ.get("STANDIN_SUBJECT_PATH", "")
    packages = os.environ.get("STANDIN_PACKAGES_DIR", "")
    if subject:
        kind, paths = "attest", sorted(p for line in subject.splitlines() if line.strip() for p in glob.glob(line.strip()))
    else:
        kind, paths = "publish", sorted(str(p) for p in Path(packages or "dist").iterdir() if p.is_file())
    if not paths:
        print(f"::error::{kind}: no files to send")
        raise SystemExit(1)
    files = [{"file": Path(p).name, "sha256": hashlib.sha256(Path(p).read_bytes()).hexdigest()} for p in paths]
    record = {"kind": kind, "subject_path": subject, "packages_dir": packages,
              "repository_url": os.environ.get("STANDIN_REPOSITORY_URL", ""), "files": files,
              "job": os.environ.get("GITHUB_JOB", "")}
    calls = Path(os.environ["XCOMPAT_STANDIN_ARTIFACTS"]) / "calls" / f"{os.environ['GITHUB_RUN_ID']}.jsonl"
    calls.parent.mkdir(parents=True, exist_ok=True)
    with calls.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\n")
    print(f"{kind}: recorded {len(files)} file(s) instead of sending them")


if __name__ == "__main__":
    main()
