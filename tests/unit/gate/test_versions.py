from __future__ import annotations

import pytest
from packaging.version import Version
from tests.helpers.action import Repo, git

from xcompat.errors import InputError
from xcompat.gate.versions import (
    bump_rank,
    find_previous_release,
    parse_tag_version,
    release_step,
    version_bump,
)


@pytest.mark.parametrize(
    ("old", "new", "bump"),
    [
        ("1.2.3", "2.0.0", "major"),
        ("1.2.3", "1.3.0", "minor"),
        ("1.2.3", "1.2.4", "patch"),
        ("1.2.3", "1.2.3.post1", "patch"),
        ("1.2", "1.2.1", "patch"),
        ("1.2.3", "1.2.3.1", "patch"),
        ("1.9.0", "2.0.0rc1", "major"),
        ("0.3.1", "0.4.0", "major"),  # in 0.y.z a y change is breaking
        ("0.3.1", "0.3.2", "minor"),
        ("0.3.1", "1.0.0", "major"),
        ("0.0.3", "0.0.4", "major"),
        ("1!1.0", "2!0.1", "major"),
        ("1.2.3", "1.2.3", "none"),
    ],
)
def test_version_bump(old: str, new: str, bump: str) -> None:
    assert version_bump(Version(old), Version(new)) == bump


def test_parse_tag_version_prefixes() -> None:
    assert parse_tag_version("v1.2.0") == Version("1.2.0")
    assert parse_tag_version("mypkg-1.2.0", "mypkg-") == Version("1.2.0")
    assert parse_tag_version("other-1.2.0", "mypkg-") is None
    assert parse_tag_version("nightly") is None


def test_bump_rank_rejects_unknown() -> None:
    assert bump_rank("major") > bump_rank("minor") > bump_rank("patch") > bump_rank("none")
    with pytest.raises(InputError, match="unknown bump 'huge'"):
        bump_rank("huge")


def test_previous_release_skips_prereleases_and_unrelated_tags(repo: Repo) -> None:
    repo.commit()
    repo.tag("v1.0.0")
    repo.commit()
    repo.tag("v1.1.0", annotated=False)  # lightweight tags count too
    repo.commit()
    repo.tag("v2.0.0rc1")
    repo.tag("nightly")
    repo.commit()
    repo.tag("v2.0.0")
    previous, how = find_previous_release(repo.path, "v2.0.0")
    assert previous == "v1.1.0"
    assert "--merged refs/tags/v2.0.0" in how


def test_previous_release_only_sees_reachable_tags(repo: Repo) -> None:
    repo.commit()
    repo.tag("v1.0.0")
    base = git(repo.path, "rev-parse", "HEAD").strip()
    git(repo.path, "checkout", "-q", "-b", "maint")
    repo.commit()
    repo.tag("v1.5.0")  # on a maintenance branch, not an ancestor of main's next release
    git(repo.path, "checkout", "-q", "main")
    assert git(repo.path, "rev-parse", "HEAD").strip() == base
    repo.commit()
    repo.tag("v1.1.0")
    assert find_previous_release(repo.path, "v1.1.0")[0] == "v1.0.0"


def test_release_step_from_untagged_head_uses_head(repo: Repo) -> None:
    repo.commit()
    repo.tag("v0.4.2")
    repo.commit()
    step = release_step(repo.path, "v0.5.0")  # tag not created yet: a dry run from HEAD
    assert (step.previous_tag, step.bump, step.how_found) == ("v0.4.2", "major", "git tag --merged HEAD")


def test_release_step_first_release(repo: Repo) -> None:
    repo.commit()
    repo.tag("v0.1.0")
    step = release_step(repo.path, "v0.1.0")
    assert step.previous_tag is None and step.bump is None


def test_release_step_not_increasing(repo: Repo) -> None:
    repo.commit()
    repo.tag("v2.0.0")
    step = release_step(repo.path, "v1.9.0", previous_tag="v2.0.0")
    assert step.bump is None and step.previous_tag == "v2.0.0"


def test_release_step_rejects_non_version_tag(repo: Repo) -> None:
    repo.commit()
    with pytest.raises(InputError, match="'release-candidate' is not a PEP 440 version"):
        release_step(repo.path, "release-candidate")


def test_shallow_clone_without_tags_says_fetch_depth(repo: Repo, tmp_path) -> None:
    repo.commit()
    repo.tag("v1.0.0")
    repo.commit()
    repo.commit()
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", "--no-tags", f"file://{repo.path}", str(clone))
    with pytest.raises(InputError, match="shallow clone") as info:
        release_step(clone, "v1.1.0")
    assert "fetch-depth: 0" in (info.value.hint or "")
