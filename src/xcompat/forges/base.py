"""What a forge is to xcompat, and what publishing a report on one returns.

A forge is a code host whose CI runs xcompat and whose API takes the report. Every forge
satisfies ``Forge``; ``xcompat report`` reaches them only through the ``FORGES`` table
(``xcompat.forges``) and these types, so adding a forge adds a table entry and nothing else.

The forges' entries in the table stay light (no dataclasses, no HTTP client, no renderer):
the logger asks them which CI it runs under at every start. Each forge imports these types
and its API client when it publishes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from xcompat.forges.comment_mode import CommentMode
    from xcompat.report.model import Report
    from xcompat.results.stage_result import StageResult


@dataclass(frozen=True, kw_only=True)
class Delivery:
    """What happened on one channel."""

    channel: str
    ok: bool
    detail: str
    url: str | None = None

    def describe(self, service: str) -> str:
        """The log line: ``GitHub check run: xcompat: failure, 3 annotation(s) (https://...)``."""
        return f"{service} {self.channel}: {self.detail}" + (f" ({self.url})" if self.url else "")


@dataclass(kw_only=True)
class PublishOutcome:
    deliveries: list[Delivery] = field(default_factory=list)
    # Why the failed deliveries were to be expected (a fork's read-only token: the report
    # travels in the bundle instead); None when each failure is a posting failure.
    expected_failures: str | None = None

    @property
    def failed(self) -> list[Delivery]:
        return [d for d in self.deliveries if not d.ok]

    @property
    def posting_failures(self) -> list[Delivery]:
        """The failed deliveries that ``--on-post-failure`` judges."""
        return [] if self.expected_failures else self.failed


@dataclass(frozen=True, kw_only=True)
class PublishOptions:
    """What ``xcompat report`` asks of every forge; a forge ignores what it has no channel for."""

    env: Mapping[str, str]
    bundle_dir: Path  # the report bundle, already written: report.json/.md/.html, results/, badges
    check_name: str  # the check run's name
    comment_key: str = "default"  # tells several xcompat comments / notes on one PR / MR apart
    comment_mode: CommentMode = "always"
    check_run: bool = True
    max_annotations: int | None = None  # None: the forge's own cap
    results: Sequence[StageResult] = ()  # the results the report was built from
    badge_paths: tuple[Path, Path] | None = None  # badge.json and badge.svg in the bundle


class Forge(Protocol):
    """A forge: how it is named and recognised, what it publishes, and how."""

    # The key in FORGES, and the ``xcompat report --<name>`` flag.
    name: str
    # How log lines name it: ``GitHub PR comment: created on #5``.
    title: str
    # The help of its ``xcompat report`` flag.
    flag_help: str
    # The report channels it publishes, in the order it publishes them.
    channels: tuple[str, ...]

    def detect(self, env: Mapping[str, str]) -> bool:
        """Whether this process runs in this forge's CI."""
        ...

    def artifact_url(self, env: Mapping[str, str], bundle_dir: Path) -> str | None:
        """Where this run's report can be browsed, linked wherever the report folds sections.

        Reads the forge's environment: when the forge cannot publish from here at all, it
        raises ``InputError`` now, before a result is read.
        """
        ...

    def publish(self, report: Report, options: PublishOptions) -> PublishOutcome:
        """Deliver the report on every channel the options leave on; log each delivery.

        A channel that cannot be delivered is a failed ``Delivery``, never an exception.
        """
        ...


def log_deliveries(service: str, deliveries: Iterable[Delivery]) -> None:
    """One log line per delivery: information when it arrived, a warning when not."""
    from xcompat.log import get_logger

    log = get_logger()
    for delivery in deliveries:
        if delivery.ok:
            log.info(delivery.describe(service))
        else:
            log.warning(delivery.describe(service))
