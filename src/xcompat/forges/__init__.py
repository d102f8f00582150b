"""Delivering reports to code forges (GitHub, GitLab) over their REST APIs.

``FORGES`` is the one place a forge is named: ``xcompat report --<name>`` takes its flags
from it and publishes through each entry, which satisfies ``xcompat.forges.base.Forge``.
Which forge's CI runs this process is ``xcompat.ci``'s answer (its ``FORGE_MARKERS``),
which ``Forge.detect`` asks. Importing the table stays cheap (no dataclasses, no HTTP
client): ``xcompat report --help`` reads it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xcompat.forges.github_actions import GitHubForge
from xcompat.forges.gitlab_ci import GitLabForge

if TYPE_CHECKING:
    from xcompat.forges.base import Forge

FORGES: dict[str, Forge] = {
    "github": GitHubForge(),
    "gitlab": GitLabForge(),
}
