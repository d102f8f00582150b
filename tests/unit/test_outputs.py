"""The one output policy (xcompat.outputs): every option that names an output, every kind of path.

The option list is discovered from the CLI registry, so a new command's output options are
covered without editing this file; a guard test fails when an output-looking option does
not use the policy's argparse types. What needs a process of its own (a file-size limit, a
real signal, another user) is in tests/integration/test_outputs_in_child_processes.py.
"""

from __future__ import annotations

import argparse
import os
import socket
import stat
import subprocess
import threading
from pathlib import Path

import pytest
from tests.helpers.cli import xcompat_in_process

from xcompat import cli
from xcompat.outputs import OutputDir, OutputError, OutputFile, write_bytes

REPO = Path(__file__).resolve().parents[2]
SAMPLE_MATRIX = REPO / "examples" / "sample-ext" / ".xcompat" / "matrix.yml"

# Option destinations that name something a command writes.
OUTPUT_DESTS = {"out", "output", "out_dir", "bundle_dir", "junit"}


def _command_parsers() -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    found = []
    for key in cli.COMMANDS:
        parser = cli.build_parser(list(key))
        sub: argparse.ArgumentParser = parser
        for word in key:
            action = next(a for a in sub._actions if isinstance(a, argparse._SubParsersAction))
            sub = action.choices[word]
        found.append((key, sub))
    return found


def _output_options(kind: type) -> list[tuple[tuple[str, ...], argparse.ArgumentParser, argparse.Action]]:
    return [
        (key, sub, action)
        for key, sub in _command_parsers()
        for action in sub._actions
        if isinstance(action.type, kind)
    ]


FILE_OPTIONS = _output_options(OutputFile)
DIR_OPTIONS = _output_options(OutputDir)


def _name(action: argparse.Action) -> str:
    return max(action.option_strings, key=len)


def _ids(options):
    return [f"{' '.join(key)} {_name(action)}" for key, _, action in options]


def _parse_error(sub: argparse.ArgumentParser, option: str, value: str, capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        sub.parse_args([option, value])
    assert exc.value.code == 2
    return capsys.readouterr().err


@pytest.fixture
def char_device(tmp_path: Path) -> Path:
    """A private copy of /dev/null's device node (c 1 3) in a temporary folder."""
    node = tmp_path / "null"
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, OSError) as exc:
        pytest.skip(f"mknod of a character device is refused here ({exc}); run as root to cover device nodes")
    return node


def test_the_registry_declares_output_options_with_the_policy_types():
    names = set(_ids(FILE_OPTIONS)) | set(_ids(DIR_OPTIONS))
    # A few that must be there; the rest are found automatically.
    for expected in ("probe --output", "matrix plan --output", "report --out", "gate --out",
                     "run --out", "build --out", "report --bundle-dir", "coverage merge --out-dir"):
        assert expected in names


def test_every_output_looking_option_uses_the_policy():
    offenders = []
    for key, sub in _command_parsers():
        for action in sub._actions:
            if action.dest not in OUTPUT_DESTS and not (action.dest == "json" and action.nargs is None
                                                        and not isinstance(action, argparse._StoreTrueAction)):
                continue
            if isinstance(action, (argparse._StoreTrueAction, argparse._StoreConstAction)):
                continue
            if not isinstance(action.type, (OutputFile, OutputDir)):
                offenders.append(f"{' '.join(key)} {'/'.join(action.option_strings)}")
    assert offenders == []


@pytest.mark.parametrize("key,sub,action", FILE_OPTIONS, ids=_ids(FILE_OPTIONS))
def test_file_options_refuse_a_folder_naming_the_option(key, sub, action, tmp_path, capsys):
    err = _parse_error(sub, _name(action), str(tmp_path), capsys)
    last = err.strip().splitlines()[-1]
    assert _name(action) in last and "is a folder" in last
    assert "Traceback" not in err


@pytest.mark.parametrize("key,sub,action", FILE_OPTIONS, ids=_ids(FILE_OPTIONS))
def test_file_options_refuse_a_parent_that_is_not_a_folder(key, sub, action, tmp_path, capsys):
    plain = tmp_path / "plain"
    plain.write_text("x")
    err = _parse_error(sub, _name(action), str(plain / "out.json"), capsys)
    assert "is not a folder" in err.strip().splitlines()[-1]
    assert plain.read_text() == "x"


@pytest.mark.parametrize("key,sub,action", FILE_OPTIONS, ids=_ids(FILE_OPTIONS))
def test_file_options_accept_devices_and_fifos(key, sub, action, char_device, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert action.type(str(char_device)) == char_device
    assert action.type(str(fifo)) == fifo
    assert action.type(str(tmp_path / "new" / "deeper" / "out.json")) == tmp_path / "new" / "deeper" / "out.json"


@pytest.mark.parametrize("key,sub,action", FILE_OPTIONS, ids=_ids(FILE_OPTIONS))
def test_dash_is_stdout_only_where_stdout_is_free(key, sub, action, capsys):
    if action.type.stdout:
        assert str(action.type("-")) == "-"
    else:
        err = _parse_error(sub, _name(action), "-", capsys)
        assert "standard output already carries" in err


@pytest.mark.parametrize("key,sub,action", DIR_OPTIONS, ids=_ids(DIR_OPTIONS))
def test_dir_options_refuse_special_and_regular_files(key, sub, action, char_device, tmp_path, capsys):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    plain = tmp_path / "plain"
    plain.write_text("keep")
    for target, words in ((char_device, "character device"), (fifo, "FIFO"), (plain, "regular file")):
        err = _parse_error(sub, _name(action), str(target), capsys)
        last = err.strip().splitlines()[-1]
        assert _name(action) in last and words in last
    assert stat.S_ISCHR(os.stat(char_device).st_mode) and stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert plain.read_text() == "keep"
    assert action.type(str(tmp_path / "fresh")) == tmp_path / "fresh"


# --- the writer --------------------------------------------------------------------------


def test_a_device_node_is_written_in_place_never_replaced(char_device):
    write_bytes(char_device, b'{"version": 1}\n')
    assert stat.S_ISCHR(os.stat(char_device).st_mode)
    assert os.listdir(char_device.parent) == ["null"]


def test_a_fifo_is_written_to_its_reader(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    write_bytes(fifo, b"hello")
    reader.join(10)
    assert got == [b"hello"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_socket_is_written_to_its_listener(tmp_path):
    path = tmp_path / "s.sock"
    got: list[bytes] = []
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(path))
        server.listen(1)

        def accept():
            conn, _ = server.accept()
            with conn:
                chunks = []
                while chunk := conn.recv(4096):
                    chunks.append(chunk)
                got.append(b"".join(chunks))

        t = threading.Thread(target=accept)
        t.start()
        write_bytes(path, b"report")
        t.join(10)
    assert got == [b"report"]


def test_a_folder_and_a_file_parent_are_clear_errors(tmp_path):
    with pytest.raises(OutputError, match="is a folder"):
        write_bytes(tmp_path, b"x")
    (tmp_path / "f").write_text("keep")
    with pytest.raises(OutputError, match="is not a folder"):
        write_bytes(tmp_path / "f" / "out.json", b"x")
    assert (tmp_path / "f").read_text() == "keep"


def test_a_symlink_is_written_through_and_kept(tmp_path):
    target = tmp_path / "real.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    write_bytes(link, b"new")
    assert link.is_symlink() and target.read_text() == "new"


def test_a_symlink_to_a_device_keeps_the_device(char_device, tmp_path):
    link = tmp_path / "out.json"
    link.symlink_to(char_device)
    write_bytes(link, b"x")
    assert link.is_symlink() and stat.S_ISCHR(os.stat(char_device).st_mode)


def test_missing_parents_are_created(tmp_path):
    write_bytes(tmp_path / "a" / "b" / "c.json", b"{}")
    assert (tmp_path / "a" / "b" / "c.json").read_bytes() == b"{}"


def test_a_replaced_file_keeps_its_mode(tmp_path):
    path = tmp_path / "r.json"
    path.write_text("old")
    path.chmod(0o640)
    write_bytes(path, b"new")
    assert stat.S_IMODE(path.stat().st_mode) == 0o640 and path.read_text() == "new"


@pytest.mark.parametrize("umask,expected", [(0o022, 0o644), (0o027, 0o640), (0o002, 0o664)])
def test_a_new_file_gets_the_mode_the_umask_gives(tmp_path, umask, expected):
    old = os.umask(umask)
    try:
        write_bytes(tmp_path / "n.json", b"{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "n.json").stat().st_mode) == expected


def test_a_replaced_file_keeps_its_owner_where_allowed(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("changing a file's owner needs root; the mode is still kept (tested above)")
    path = tmp_path / "owned.json"
    path.write_text("old")
    os.chown(path, 4321, 4322)
    write_bytes(path, b"new")
    st = path.stat()
    assert (st.st_uid, st.st_gid) == (4321, 4322) and path.read_text() == "new"


# --- through the real command line ------------------------------------------------------


def _xcompat(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return xcompat_in_process(*args, cwd=cwd)


def test_probe_and_plan_write_to_a_device_without_replacing_it(char_device, tmp_path):
    for args in (["probe", "-o", str(char_device)],
                 ["matrix", "plan", str(SAMPLE_MATRIX), "-o", str(char_device)]):
        proc = _xcompat(*args, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert stat.S_ISCHR(os.stat(char_device).st_mode), args
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]


def test_plan_to_dash_is_stdout(tmp_path):
    proc = _xcompat("matrix", "plan", str(SAMPLE_MATRIX), "-o", "-", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert '"cells"' in proc.stdout or proc.stdout.lstrip().startswith(("{", "["))
    assert list(tmp_path.iterdir()) == []


def test_a_fifo_output_through_the_cli(tmp_path):
    fifo = tmp_path / "plan.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    proc = _xcompat("matrix", "plan", str(SAMPLE_MATRIX), "-o", str(fifo), cwd=tmp_path)
    reader.join(30)
    assert proc.returncode == 0, proc.stderr
    assert got and got[0].strip()
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_errors_are_one_line_without_traceback(tmp_path):
    proc = _xcompat("probe", "-o", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].endswith("is a folder; give a file path")


def test_the_temporary_file_is_private_exclusive_and_retried_on_a_taken_name(tmp_path, monkeypatch):
    from xcompat import outputs

    draws = iter([b"\x01" * 6, b"\x01" * 6, b"\x02" * 6])
    monkeypatch.setattr(outputs.os, "urandom", lambda n: next(draws))
    fd, first = outputs._create_temporary(tmp_path, "out.json")
    os.close(fd)
    assert Path(first).name == ".out.json.010101010101.tmp"
    assert stat.S_IMODE(os.stat(first).st_mode) == 0o600
    fd, second = outputs._create_temporary(tmp_path, "out.json")  # the same draw first: taken, drawn again
    os.close(fd)
    assert Path(second).name == ".out.json.020202020202.tmp"
    monkeypatch.setattr(outputs.os, "urandom", lambda n: b"\x01" * 6)
    with pytest.raises(FileExistsError):
        outputs._create_temporary(tmp_path, "out.json")
