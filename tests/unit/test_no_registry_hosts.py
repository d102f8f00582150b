"""No tracked file names a package registry's host.

Which index, archive or registry a build downloads from is the user's choice (their pip, apt
and npm configuration, a mirror behind a proxy, a local wheel folder); a host written into the
project's code, docs, workflows or tests overrides that choice or shows it as the one to use.

The hosts are kept out of this file too: only the SHA-256 of each name is listed, and every
host-like token of a file is checked with all its parent domains, so a subdomain (``www.``,
``files.``, ``upload.``) of a listed name counts as naming it. Where the machine's own pip,
npm or debootstrap is installed, the tests below read its own default host from it and check
that the list catches it.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest

REPO = Path(__file__).resolve().parents[2]

# SHA-256 of: PyPI's index host and its files host, Debian's archive host and its security
# archive host, and npm's registry host (any subdomain of one counts as naming it).
REGISTRY_HOST_HASHES = frozenset({
    "a4aa2ac280bb8d1a0ce7a1be5a7bfb10292b49fe9435ad5cff19f421f3c70e41",
    "8b5bb5eb9d758455b8635855cf8aaf05b68775e3f83f0291e800ef338fb9783c",
    "e680c440a2e92079ab1bf7a927e8d3920f1bcd173c0487e28e020110b2e59efc",
    "1ba4e37997a2e986efa6cd844e43fd25b9e816359d31612baa9c18b71e3b5294",
    "0dc11026ac75c015aaa1deafff4a7a54ef6d0cf6b3c7f9b1d2c8f3502929aa9e",
})

HOST_TOKEN = re.compile(rb"[a-z0-9.-]+\.[a-z]{2,}")


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()


def hosts_named(data: bytes, hashes: frozenset[str]) -> set[str]:
    """The listed hosts (or parent domains) that ``data`` names, in any letter case."""
    found = set()
    for token in set(HOST_TOKEN.findall(data.lower())):
        labels = token.decode("ascii").split(".")
        for start in range(len(labels) - 1):
            name = ".".join(labels[start:])
            if _digest(name) in hashes:
                found.add(name)
    return found


def _is_binary(data: bytes) -> bool:
    return b"\0" in data[:8000]  # git's own test for a binary file


def registry_hosts_in_tracked_files(repo: Path, hashes: frozenset[str]) -> dict[str, set[str]]:
    """``{path: hosts}`` for every text file git tracks in ``repo`` (as it is in the work tree)
    that names a host whose SHA-256 is in ``hashes``."""
    listing = subprocess.run(["git", "-C", str(repo), "ls-files", "-z"], capture_output=True, check=True)
    named = {}
    for raw in listing.stdout.split(b"\0"):
        if not raw:
            continue
        path = repo / raw.decode("utf-8", "surrogateescape")
        if path.is_symlink() or not path.is_file():  # deleted in the work tree, or a submodule
            continue
        data = path.read_bytes()
        if _is_binary(data):
            continue
        hosts = hosts_named(data, hashes)
        if hosts:
            named[path.relative_to(repo).as_posix()] = hosts
    return named


def test_no_tracked_file_names_a_package_registry_host() -> None:
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout: no tracked files to read")
    named = registry_hosts_in_tracked_files(REPO, REGISTRY_HOST_HASHES)
    assert not named, "tracked files name a package registry host (leave it to the user's configuration):\n" + \
        "\n".join(f"  {path}: {', '.join(sorted(hosts))}" for path, hosts in sorted(named.items()))


# -- the scan can fail --

def _git_repo(root: Path, files: dict[str, bytes], untracked: dict[str, bytes] | None = None) -> Path:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for name, data in {**files, **(untracked or {})}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    subprocess.run(["git", "-C", str(root), "add", "--", *files], check=True)
    return root


def test_the_scan_reports_tracked_text_files_naming_a_listed_host(tmp_path: Path) -> None:
    hashes = frozenset({_digest("packages.example.test")})
    repo = _git_repo(tmp_path / "repo", {
        "README.md": b"pip install --index-url https://Mirror.Packages.Example.Test/simple/ thing\n",
        "docs/clean.md": b"packages.example.net and example.test are other names\n",
        "tools/setup.sh": b"url=packages.example.test/debian\n",
        "data.bin": b"\0packages.example.test",
    }, untracked={"notes.txt": b"packages.example.test"})
    assert registry_hosts_in_tracked_files(repo, hashes) == {
        "README.md": {"packages.example.test"},
        "tools/setup.sh": {"packages.example.test"},
    }


def _pip_default_hosts() -> set[str]:
    index = pytest.importorskip("pip._internal.models.index")
    return {urlsplit(index.PyPI.url).hostname, index.PyPI.file_storage_domain}


def _npm_default_hosts(tmp_path: Path) -> set[str]:
    npm = shutil.which("npm")
    if not npm:
        pytest.skip("npm is not installed")
    for name in ("user-npmrc", "global-npmrc"):
        (tmp_path / name).touch()
    env = {k: v for k, v in os.environ.items() if not k.lower().startswith("npm_config_")}
    try:  # empty user and global configuration: npm's built-in default
        out = subprocess.run([npm, "config", "get", "registry", f"--userconfig={tmp_path / 'user-npmrc'}",
                              f"--globalconfig={tmp_path / 'global-npmrc'}"],
                             check=False, capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    except subprocess.TimeoutExpired:
        pytest.skip("npm config get registry did not answer")
    if out.returncode != 0:
        pytest.skip("npm config get registry failed: " + out.stderr.strip()[-200:])
    return {urlsplit(out.stdout.strip()).hostname}


def _debootstrap_default_hosts() -> set[str]:
    debootstrap = shutil.which("debootstrap") or next(
        (p for p in ("/usr/sbin/debootstrap", "/sbin/debootstrap") if Path(p).is_file()), None)
    if not debootstrap:
        pytest.skip("debootstrap is not installed")
    defaults = re.findall(r'^DEF_(?:HTTPS_)?MIRROR="([^"]+)"', Path(debootstrap).read_text(errors="replace"),
                          re.MULTILINE)
    if not defaults:
        pytest.skip("this debootstrap sets no DEF_MIRROR")
    return {urlsplit(url).hostname for url in defaults}


def _default_hosts(tool: str, tmp_path: Path) -> set[str]:
    if tool == "pip":
        return _pip_default_hosts()
    if tool == "npm":
        return _npm_default_hosts(tmp_path)
    return _debootstrap_default_hosts()


@pytest.mark.parametrize("tool", ["pip", "npm", "debootstrap"])
def test_the_list_catches_each_tools_own_default_host(tmp_path: Path, tool: str) -> None:
    """The hosts a tool uses when nothing is configured, read from the tool itself: a file
    naming any of them is reported."""
    hosts = {h for h in _default_hosts(tool, tmp_path) if h}
    assert hosts, f"{tool} gave no default host"
    repo = _git_repo(tmp_path / "repo", {
        f"file{i}.txt": f"fetched from https://{host}/some/path\n".encode() for i, host in enumerate(sorted(hosts))})
    named = registry_hosts_in_tracked_files(repo, REGISTRY_HOST_HASHES)
    assert set(named) == {f"file{i}.txt" for i in range(len(hosts))}, f"{tool}'s default hosts {sorted(hosts)} " \
        f"are not all caught: {named}"
