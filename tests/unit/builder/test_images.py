"""The Dockerfiles in images/: every base pinned by digest with a comment naming its tag,
and every runner image installing xcompat from this repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

dockerfile_parse = pytest.importorskip("dockerfile_parse")

IMAGES = Path(__file__).resolve().parents[3] / "images"
RUNNERS = ("runner-cpu.Dockerfile", "runner-cuda.Dockerfile", "runner-rocm.Dockerfile")
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def _repository(reference: str) -> str:
    name = reference.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return name.rsplit(":", 1)[0] if ":" in last else name


def image_findings(text: str) -> list[str]:
    """What is wrong with a Dockerfile's pinning and xcompat install (empty: nothing)."""
    parser = dockerfile_parse.DockerfileParser(fileobj=None, cache_content=False)
    parser.content = text
    findings: list[str] = []
    structure = parser.structure
    stages = {}
    # ARGs before the first FROM: `ARG BASE=<pinned>` + `FROM ${BASE}` lets users build from
    # another base (--build-arg BASE=...) while the default stays pinned.
    global_args: dict[str, int] = {}
    for index, item in enumerate(structure):
        if item["instruction"] == "FROM":
            break
        if item["instruction"] == "ARG":
            global_args[item["value"].split("=", 1)[0].strip()] = index
    for index, item in enumerate(structure):
        if item["instruction"] != "FROM":
            continue
        words = [w for w in item["value"].split() if not w.startswith("--")]
        reference = words[0]
        if len(words) >= 3 and words[1].lower() == "as":
            stages[words[2]] = reference
        if reference in stages:  # FROM an earlier stage
            continue
        line = item["startline"] + 1
        variable = re.fullmatch(r"\$\{?(\w+)\}?", reference)
        if variable:
            arg = global_args.get(variable.group(1))
            value = structure[arg]["value"] if arg is not None else ""
            if "=" not in value:
                findings.append(f"line {line}: {reference} has no default (ARG {variable.group(1)}=<pinned image>)")
                continue
            reference = value.split("=", 1)[1].strip().strip('"')
            item, index = structure[arg], arg
        if not DIGEST.search(reference):
            findings.append(f"line {line}: {reference} is not pinned by digest")
            continue
        previous = structure[index - 1] if index else None
        tag = None
        if previous and previous["instruction"] == "COMMENT" and previous["endline"] == item["startline"] - 1:
            match = re.match(r"tag:\s*(\S+)", previous["value"])
            tag = match.group(1) if match else None
        if tag is None:
            findings.append(f"line {line}: no '# tag: NAME:TAG' comment right above the FROM")
        elif _repository(tag) != _repository(reference):
            findings.append(f"line {line}: tag comment names {tag}, FROM pulls {_repository(reference)}")
        elif ":" not in tag.rsplit("/", 1)[-1]:
            findings.append(f"line {line}: tag comment {tag} names no tag")
    return findings


def xcompat_install_findings(text: str) -> list[str]:
    parser = dockerfile_parse.DockerfileParser(fileobj=None, cache_content=False)
    parser.content = text
    copies = [i["value"].split() for i in parser.structure if i["instruction"] == "COPY"]
    targets = [words[-1] for words in copies if words and words[0] == "."]
    if not targets:
        return ["the repository is not copied into the image (COPY . DEST)"]
    runs = " ".join(i["value"] for i in parser.structure if i["instruction"] == "RUN")
    if not any(re.search(rf"pip install[^&|;]*[\"']?{re.escape(t)}(\[[^\]]*\])?[\"']?", runs) for t in targets):
        return [f"xcompat is not pip-installed from the copied repository ({', '.join(targets)})"]
    return []


@pytest.mark.parametrize("name", sorted(p.name for p in IMAGES.glob("*.Dockerfile")))
def test_bases_are_pinned_by_digest_with_tag_comment(name: str) -> None:
    assert image_findings((IMAGES / name).read_text()) == []


@pytest.mark.parametrize("name", RUNNERS)
def test_runner_images_install_xcompat_from_the_repository(name: str) -> None:
    text = (IMAGES / name).read_text()
    assert xcompat_install_findings(text) == []
    assert "xcompat --version" in text  # the image proves the install worked


def test_every_image_is_checked() -> None:
    names = {p.name for p in IMAGES.glob("*.Dockerfile")}
    assert set(RUNNERS) | {"manylinux_2_28-cuda.Dockerfile", "builder-debian.Dockerfile"} <= names


def test_builder_has_the_cuda_toolkit_on_manylinux_2_28() -> None:
    parser = dockerfile_parse.DockerfileParser(path=str(IMAGES / "manylinux_2_28-cuda.Dockerfile"))
    assert "manylinux_2_28" in parser.baseimage
    assert parser.envs.get("CUDA_HOME") == "/usr/local/cuda"
    assert "nvcc --version" in parser.content


@pytest.mark.parametrize(
    ("text", "finding"),
    [
        ("FROM python:3.12-slim\n", "not pinned by digest"),
        ("FROM python@sha256:" + "a" * 64 + "\n", "no '# tag: NAME:TAG' comment"),
        ("# tag: ubuntu:24.04\nFROM python@sha256:" + "a" * 64 + "\n", "tag comment names ubuntu:24.04"),
        ("# tag: python\nFROM python@sha256:" + "a" * 64 + "\n", "names no tag"),
        ("# tag: python:3.12\n\nFROM python@sha256:" + "a" * 64 + "\n", "no '# tag"),
        ("FROM python:3.12@sha256:abc\n", "not pinned by digest"),
    ],
)
def test_pin_check_catches_bad_dockerfiles(text: str, finding: str) -> None:
    findings = image_findings(text)
    assert findings and finding in findings[0]


@pytest.mark.parametrize(
    ("text", "finding"),
    [
        ("ARG BASE\nFROM ${BASE}\n", "has no default"),
        ("FROM ${BASE}\n", "has no default"),
        ("ARG BASE=python:3.12\nFROM ${BASE}\n", "not pinned by digest"),
        ("ARG BASE=python@sha256:" + "a" * 64 + "\nFROM $BASE\n", "no '# tag: NAME:TAG' comment"),
        ("# tag: python:3.12\nARG OTHER=1\nARG BASE=python@sha256:" + "a" * 64 + "\nFROM ${BASE}\n", "no '# tag"),
    ],
)
def test_pin_check_follows_the_base_argument(text: str, finding: str) -> None:
    findings = image_findings(text)
    assert findings and finding in findings[0]


def test_pin_check_accepts_a_pinned_base_argument() -> None:
    text = "# tag: python:3.12-slim\nARG BASE=python:3.12-slim@sha256:" + "b" * 64 + "\nFROM ${BASE}\nRUN true\n"
    assert image_findings(text) == []


@pytest.mark.parametrize("name", ["runner-cpu.Dockerfile", "builder-debian.Dockerfile"])
def test_local_base_and_wheel_folder_build_arguments(name: str) -> None:
    """These two build FROM a local base (images/local-base.sh) and, for torch, from a local
    wheel folder: docs/images.md shows how; the container tier builds them that way."""
    parser = dockerfile_parse.DockerfileParser(path=str(IMAGES / name))
    args = [i["value"].split("=", 1)[0] for i in parser.structure if i["instruction"] == "ARG"]
    assert args[0] == "BASE" and parser.structure[[i["instruction"] for i in parser.structure].index("FROM")][
        "value"].strip() == "${BASE}"
    wheel_folder = "TORCH_FIND_LINKS" if name.startswith("runner") else "PIP_FIND_LINKS"
    assert wheel_folder in args


def test_pin_check_accepts_stage_references() -> None:
    digest = "a" * 64
    text = f"# tag: a/b:1\nFROM a/b@sha256:{digest} AS build\nFROM build\n"
    assert image_findings(text) == []


@pytest.mark.parametrize(
    "text",
    ["FROM x\nRUN pip install xcompat\n", "FROM x\nCOPY . /src\nRUN pip install xcompat\n",
     "FROM x\nCOPY src /src\nRUN pip install /src\n"],
)
def test_install_check_catches_installs_not_from_the_repository(text: str) -> None:
    assert xcompat_install_findings(text)
