"""What a user installs: the wheel's contents and metadata, the licence, the pre-commit hook,
and the small command-line and terminal behaviours a first run meets."""

from __future__ import annotations

import email
import io
import re
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml
from tests.helpers.cli import xcompat_in_process

from xcompat.cli import main
from xcompat.log import Logger
from xcompat.pipeline.progress import StageProgress

REPO_ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    """xcompat's wheel, built from this checkout by its own build backend (hatchling)."""
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(REPO_ROOT)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    [path] = out.glob("xcompat-*.whl")
    return zipfile.ZipFile(path)


def metadata(wheel: zipfile.ZipFile) -> email.message.Message:
    [name] = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    return email.message_from_bytes(wheel.read(name))


def test_licence_file_is_the_apache_2_text_and_ships_in_the_wheel(wheel: zipfile.ZipFile) -> None:
    text = (REPO_ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    assert metadata(wheel)["License-Expression"] == "Apache-2.0"
    [licence] = [n for n in wheel.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
    assert wheel.read(licence).decode() == text


def test_wheel_holds_no_private_key_and_no_local_build_output(wheel: zipfile.ZipFile) -> None:
    names = wheel.namelist()
    for name in names:
        if name.endswith((".pub", "/")):
            continue
        head = wheel.read(name)[:200]
        assert b"PRIVATE KEY" not in head, f"{name} is a private key"
    assert not [n for n in names if n.endswith("/demo_signing_key")]
    assert "xcompat/_data/examples/sample-ext/.xcompat/demo_signing_key.pub" in names  # the demo still verifies
    assert not [n for n in names if re.search(r"/(build|dist)/|\.egg-info/|__pycache__/|\.so$|\.o$", n)
                and not n.startswith("xcompat/builder/")]


def test_wheel_ships_data_and_typing_marker(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    assert "xcompat/py.typed" in names  # PEP 561: covers xcompat.testing and every other subpackage
    assert "xcompat/testing/__init__.py" in names
    assert "xcompat/_data/schemas/matrix.schema.json" in names
    assert "xcompat/_data/examples/sample-ext/.xcompat/matrix.yml.sig" in names
    assert any(n.startswith("xcompat/_data/kernels/") for n in names)


def test_project_urls_and_classifiers(wheel: zipfile.ZipFile) -> None:
    meta = metadata(wheel)
    urls = dict(v.split(", ", 1) for v in meta.get_all("Project-URL") or [])
    assert {"Homepage", "Documentation", "Source", "Issues"} <= set(urls)
    assert all(u.startswith("https://") for u in urls.values())
    classifiers = meta.get_all("Classifier") or []
    assert "Typing :: Typed" in classifiers
    assert "Framework :: Pytest" in classifiers  # the pytest11 entry point
    requires = re.search(r">=\s*3\.(\d+)", meta["Requires-Python"])
    assert requires is not None
    versions = sorted(int(m.group(1)) for c in classifiers
                      if (m := re.fullmatch(r"Programming Language :: Python :: 3\.(\d+)", c)))
    assert versions and versions[0] == int(requires.group(1))  # no classifier below the floor


# -- the pre-commit hook ------------------------------------------------------------------------

def hooks() -> list[dict]:
    return yaml.safe_load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))


def test_pre_commit_hook_manifest_shape() -> None:
    [hook] = hooks()
    assert hook["id"] == "xcompat-matrix-validate"
    assert {"id", "name", "entry", "language"} <= set(hook)
    assert hook["language"] == "python"  # pre-commit pip-installs this repository for it
    files = re.compile(hook["files"])
    for path in (".xcompat/matrix.yml", "pkg/.xcompat/matrix.yaml"):
        assert files.search(path), path
    for path in ("matrix.yml", ".xcompat/matrix.yml.sig", ".xcompat/allowed_signers", "x.xcompat/matrix.yml"):
        assert not files.search(path), path


def test_pre_commit_hook_entry_checks_the_files_it_is_given(tmp_path: Path) -> None:
    [hook] = hooks()
    good = REPO_ROOT / "examples" / "sample-ext" / ".xcompat" / "matrix.yml"
    bad = tmp_path / ".xcompat" / "matrix.yml"
    bad.parent.mkdir()
    bad.write_text(good.read_text().replace("backends:", "backendz:", 1))
    entry = shlex.split(hook["entry"])
    assert entry[0] == "xcompat"
    # As pre-commit runs it: the entry, then the staged files that match.
    ok = xcompat_in_process(*entry[1:], str(good))
    assert ok.returncode == 0, ok.stderr
    failed = xcompat_in_process(*entry[1:], str(good), str(bad))
    assert failed.returncode == 2
    assert "backendz" in failed.stderr and str(bad) in failed.stderr


# -- $schema in matrix.yml -------------------------------------------------------------------------

MATRIX = """\
# yaml-language-server: $schema=https://xcompat.dev/schemas/matrix.schema.json
{schema}xcompat: 1
repo: acme/widgets
serial: 1
python: ["3.12"]
platforms:
  linux:
    archs: [x86_64]
backends:
  cpu:
    required: true
"""


def test_matrix_accepts_a_schema_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "matrix.yml"
    path.write_text(MATRIX.format(schema="$schema: ../schemas/matrix.schema.json\n"))
    assert main(["matrix", "validate", str(path)]) == 0
    path.write_text(MATRIX.format(schema="$schema: [not, a, string]\n"))
    assert main(["matrix", "validate", str(path)]) == 2
    assert "$schema" in capsys.readouterr().err


def test_documented_modeline_names_the_shipped_schema() -> None:
    import json

    schema = json.loads((REPO_ROOT / "schemas" / "matrix.schema.json").read_text())
    docs = (REPO_ROOT / "docs" / "matrix.md").read_text()
    assert f"# yaml-language-server: $schema={schema['$id']}" in docs


# -- the command line and the terminal -------------------------------------------------------------

def test_group_without_subcommand_prints_the_group_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["matrix"]) == 2
    out = capsys.readouterr().out
    assert out.startswith("usage: xcompat matrix")
    for sub in ("validate", "sign", "verify", "plan"):
        assert re.search(rf"^\s+{sub}\s", out, re.MULTILINE), sub
    assert main([]) == 2
    assert capsys.readouterr().out.startswith("usage: xcompat [")


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("env", "live"), [
    ({"TERM": "xterm-256color"}, True),
    ({}, True),
    ({"TERM": "dumb"}, False),
    ({"TERM": "xterm", "CI": "true"}, False),
])
def test_status_line_and_colour_follow_the_terminal(env: dict[str, str], live: bool) -> None:
    stream = FakeTTY()
    log = Logger(env, stream)
    assert log.live_terminal(stream) is live
    assert log.color is live
    with StageProgress(log, total=2, stream=stream) as progress:
        assert progress.live is live
        progress.start("build")
        progress.finish("build", "failed")
    text = stream.getvalue()
    assert ("\x1b[" in text) is live  # TERM=dumb: no cursor movement, no colour codes at all
    if not live:
        assert "build" in text  # the plain line still says what ran


def test_no_color_keeps_the_status_line_but_drops_colour() -> None:
    stream = FakeTTY()
    log = Logger({"TERM": "xterm", "NO_COLOR": "1"}, stream)
    assert log.live_terminal(stream) and not log.color


def test_piped_output_is_never_live() -> None:
    stream = io.StringIO()
    assert not Logger({"TERM": "xterm"}, stream).live_terminal(stream)
