import io

import pytest

from xcompat import cli
from xcompat.errors import InputError, VerificationError
from xcompat.log import Logger


def test_help_lists_every_command(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for key in cli.COMMANDS:
        assert key[0] in out


def test_help_is_as_wide_as_the_terminal_says(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "50")
    with pytest.raises(SystemExit):
        cli.main(["abi", "diff", "--help"])
    narrow = capsys.readouterr().out.splitlines()
    monkeypatch.setenv("COLUMNS", "200")
    with pytest.raises(SystemExit):
        cli.main(["abi", "diff", "--help"])
    wide = capsys.readouterr().out.splitlines()
    assert len(narrow) > len(wide)  # argparse wraps at the width given (a long option may overrun it)
    assert max(map(len, narrow)) < max(map(len, wide)) <= 198


def test_error_message_names_file_line_and_hint():
    err = InputError("unknown key 'pythn'", file="m.yml", line=3, column=5, hint="did you mean 'python'?")
    assert str(err) == "m.yml:3:5: unknown key 'pythn' (did you mean 'python'?)"
    assert err.exit_code == 2
    assert VerificationError("x").exit_code == 3


def test_an_error_is_reported_at_its_file_with_its_hint_and_details(monkeypatch):
    from xcompat import log as log_module

    buf = io.StringIO()
    monkeypatch.setattr(log_module, "_LOG", Logger({"GITHUB_ACTIONS": "true"}, buf))
    log_module.report_error(InputError("unknown key", file="m.yml", line=3, column=5, hint="see the schema",
                                       details=["python: 3.x", "arch: x86"]))
    lines = buf.getvalue().splitlines()
    assert lines[0] == "::error file=m.yml,line=3,col=5::unknown key (see the schema)"
    assert [line.split(" ", 1)[1] for line in lines[1:]] == ["  python: 3.x", "  arch: x86"]


def test_github_annotations_are_escaped_and_capped():
    buf = io.StringIO()
    log = Logger({"GITHUB_ACTIONS": "true"}, buf)
    for i in range(12):
        log.error(f"bad\nthing {i}", file="a,b.py", line=i + 1)
    lines = buf.getvalue().splitlines()
    annotations = [ln for ln in lines if ln.startswith("::error")]
    assert len(annotations) == 10
    assert annotations[0] == "::error file=a%2Cb.py,line=1::bad%0Athing 0"
    assert any("error: a,b.py:12: bad" in ln for ln in lines)


def test_gitlab_sections_and_github_outputs(tmp_path):
    buf = io.StringIO()
    log = Logger({"GITLAB_CI": "true"}, buf)
    with log.group("build wheels"):
        log.info("inside")
    text = buf.getvalue()
    assert "section_start:" in text and "[collapsed=true]" in text and "section_end:" in text
    out = tmp_path / "out"
    gh = Logger({"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(out)}, io.StringIO())
    assert gh.set_output("matrix", '{"a":\n1}')
    body = out.read_text()
    name, rest = body.split("<<", 1)
    delim = rest.splitlines()[0]
    assert name == "matrix" and body.endswith(delim + "\n") and '{"a":\n1}' in body


def test_abi_diff_switches_the_collector_off_for_itself_only(capsys, monkeypatch):
    """``xcompat abi diff`` runs without the cyclic collector (its symbol tables hold no
    cycles) and leaves it on for a process that calls main() and goes on."""
    import _ctypes
    import gc

    from xcompat.commands import abi_diff

    seen = []
    real = abi_diff._execute

    def spy(args):
        seen.append(gc.isenabled())
        return real(args)

    monkeypatch.setattr(abi_diff, "_execute", spy)
    assert gc.isenabled()
    lib = _ctypes.__file__  # an ELF extension module wherever CPython runs on Linux
    code = cli.main(["abi", "diff", lib, lib, "--format", "json"])
    assert code == 0, capsys.readouterr()
    assert seen == [False]
    assert gc.isenabled()
