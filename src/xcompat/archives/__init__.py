"""Reading and unpacking the archives xcompat is given: wheels, torch wheels, sdists, exported sources.

Every archive comes from outside (a pull request's build, a download, a path on the command
line), so one set of member rules applies wherever one is opened:

* a member name is a relative ``/`` path: no ``..`` part, no leading ``/``, no drive letter
  (``C:``), no backslash, no NUL or other control character;
* a member is a regular file or a folder: symbolic links, hard links, devices, FIFOs and
  sockets are refused, whatever they point at (``links="copy"``, for a project's own git
  export only, writes a copy of what an in-tree link names instead of the link);
* at most ``LIMITS.wheel_members`` members, each at most ``LIMITS.wheel_member_bytes``
  unpacked, together at most ``LIMITS.wheel_total_bytes``, none (and no compressed tar
  stream) inflating more than ``LIMITS.wheel_compression_ratio`` times past 1 MiB; declared
  sizes are checked before a byte is inflated and the bytes actually written are counted too;
* every folder a member is written into is resolved and must lie inside the destination.

A zip is checked whole before anything is written; a tar stream is checked member by member
as it is read (a compressed tar cannot be listed without inflating it). Either way unpacking
goes into a fresh folder beside the destination that is renamed into place only when every
member was written: a refused or damaged archive leaves no half-unpacked folder behind.

A violation is an :class:`ArchiveError` (an input error, exit 2) naming the archive and the
member. Extracted copies that are kept (:func:`extract_zip_cached`) are keyed by the sha256
of the archive's bytes, so a different archive with the same name and size is never served
for another.
"""

from __future__ import annotations

from xcompat.archives.members import COPY_BLOCK, ArchiveError, member_parts, show
from xcompat.archives.tars import extract_tar
from xcompat.archives.writer import IfExists
from xcompat.archives.zips import (
    check_zip,
    extract_zip,
    extract_zip_cached,
    open_regular,
    read_member,
    sha256_of,
)

__all__ = [
    "COPY_BLOCK", "ArchiveError", "IfExists", "check_zip", "extract_tar", "extract_zip", "extract_zip_cached",
    "member_parts", "open_regular", "read_member", "sha256_of", "show",
]
