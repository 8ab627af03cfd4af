"""A revision of the repository, and what the working tree changed against it.

Read with the daemon's own probes after the repository's config was found safe
(`repository.inspect`): read-only runs (no optional locks, so the index is never refreshed
or written), `diff` without external diff or textconv, blobs read raw (`cat-file`, no
filters). A change is every file whose working-tree content differs from the revision's:
tracked files changed (staged or not), added (untracked and not ignored, or new in the
index) and deleted. Submodules and symbolic links are left out.

How `since` is told apart: a `content_hash` always begins with `sha256:`, which no revision
does (a ref name has no colon, and git's `<rev>:<path>` names a file, not a commit);
`merge-base:<rev>` names the merge base of HEAD and `<rev>`; anything else is a revision.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import trio

from codeward.daemon.git.messages import failure_message
from codeward.daemon.git.repository import inspect, probe
from codeward.daemon.git.runner import Completed, find_git, git_env
from codeward.protocol.errors import ErrorKind, ToolError

HASH_PREFIX = "sha256:"
MERGE_BASE = "merge-base:"
BLOB_MODES = frozenset({"100644", "100755"})  # files; not gitlinks (160000) nor links (120000)
ABSENT_MODE = "000000"

Status = Literal["added", "deleted", "modified"]


def is_content_hash(since: str) -> bool:
    """Whether `since` is a content hash (else a revision): see the module doc."""
    return since.startswith(HASH_PREFIX)


@dataclass(frozen=True)
class FileChange:
    path: str  # relative to the root
    status: Status
    old_blob: str | None  # the revision's blob (None: added)


@dataclass(frozen=True)
class Changes:
    since: str  # as given
    commit: str  # what it resolved to
    files: list[FileChange]  # sorted by path


async def changes(root: Path, since: str) -> Changes:
    """What the working tree under `root` changed against the revision `since`."""
    git = find_git(git_env(read_only=True))
    await inspect(git, root)  # refuses a config that would run programs (diff runs filters)
    commit = await resolve(git, root, since)
    raw, others = await _probes(
        git, root,
        ["diff", "--raw", "-z", "--no-abbrev", "--no-renames", "--relative", commit, "--"],
        ["ls-files", "-z", "--others", "--exclude-standard"],
    )  # fmt: skip
    if raw.exit_code != 0:
        raise _failed("diff", raw.exit_code, raw.stderr, root)
    found = parse_raw(raw.stdout)
    if others.exit_code != 0:
        raise _failed("ls-files", others.exit_code, others.stderr, root)
    for name in others.stdout.decode("utf-8", "surrogateescape").split("\x00"):
        path = root / name
        if name and name not in found and path.is_file() and not path.is_symlink():
            found[name] = FileChange(name, "added", None)
    return Changes(since, commit, [found[name] for name in sorted(found)])


async def _probes(git: str, root: Path, *argvs: list[str]) -> list[Completed]:
    """Read-only probes run at once; their results in order (a failure raised as itself)."""
    done: list[Completed | Exception | None] = [None] * len(argvs)

    async def one(i: int, args: list[str]) -> None:
        try:
            done[i] = await probe(git, root, args)
        except Exception as exc:  # raised below, not as a nursery's group
            done[i] = exc

    async with trio.open_nursery() as nursery:
        for i, args in enumerate(argvs):
            nursery.start_soon(one, i, args)
    results: list[Completed] = []
    for item in done:
        if isinstance(item, Exception):
            raise item
        assert item is not None
        results.append(item)
    return results


def parse_raw(data: bytes) -> dict[str, FileChange]:
    """The files of `git diff --raw -z --no-renames` (`:old new old_oid new_oid S NUL path
    NUL` each), by path; submodules and symbolic links left out."""
    tokens = data.decode("utf-8", "surrogateescape").split("\x00")
    found: dict[str, FileChange] = {}
    for head, name in zip(tokens[::2], tokens[1::2], strict=False):
        fields = head.lstrip(":").split()
        if len(fields) < 5:
            continue
        old_mode, new_mode, old_oid, _, letter = fields[:5]
        if letter.startswith("D") and old_mode in BLOB_MODES:
            found[name] = FileChange(name, "deleted", old_oid)
        elif old_mode == ABSENT_MODE and new_mode in BLOB_MODES:
            found[name] = FileChange(name, "added", None)
        elif old_mode in BLOB_MODES and new_mode in BLOB_MODES:
            found[name] = FileChange(name, "modified", old_oid)
        elif old_mode in BLOB_MODES:  # a file that became a link or a submodule: it is gone
            found[name] = FileChange(name, "deleted", old_oid)
    return found


async def resolve(git: str, root: Path, since: str) -> str:
    """The commit `since` names (`merge-base:<rev>`: the merge base of HEAD and `<rev>`)."""
    target = since.removeprefix(MERGE_BASE)
    if not target or target.startswith("-") or "\x00" in target or "\n" in target:
        raise _not_a_revision(since)
    commit = await _commit(git, root, target, since)
    if not since.startswith(MERGE_BASE):
        return commit
    head = await _commit(git, root, "HEAD", since)
    base = await probe(git, root, ["merge-base", head, commit])
    lines = base.stdout.decode("ascii", "replace").split()
    if base.exit_code == 1 and not lines:
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            f"HEAD and {target!r} have no common ancestor, so `{since}` names no commit; "
            "give a revision instead (a branch, a tag or a commit).",
        )
    if base.exit_code != 0 or not lines:
        raise _failed("merge-base", base.exit_code, base.stderr, root)
    return lines[0]


async def _commit(git: str, root: Path, revision: str, since: str) -> str:
    peeled = f"{revision}^{{commit}}"
    found = await probe(git, root, ["rev-parse", "--verify", "--quiet", "--end-of-options", peeled])
    lines = found.stdout.decode("ascii", "replace").split()
    if found.exit_code != 0 or not lines:
        raise _not_a_revision(since)
    return lines[0]


async def blobs(root: Path, oids: list[str], limit: int) -> dict[str, bytes | None]:
    """The content of each blob (None: larger than `limit` bytes), read raw."""
    if not oids:
        return {}
    git = find_git(git_env(read_only=True))
    wanted = list(dict.fromkeys(oids))
    listed = await probe(git, root, ["cat-file", "--batch-check"], "\n".join(wanted) + "\n")
    sizes: dict[str, int] = {}
    for line in listed.stdout.decode("ascii", "replace").splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "blob":
            sizes[parts[0]] = int(parts[2])
    small = [oid for oid in wanted if sizes.get(oid, limit + 1) <= limit]
    found: dict[str, bytes | None] = dict.fromkeys(wanted)
    if not small:
        return found
    read = await probe(git, root, ["cat-file", "--batch"], "\n".join(small) + "\n")
    if read.exit_code != 0:
        raise _failed("cat-file", read.exit_code, read.stderr, root)
    data, at = read.stdout, 0
    for oid in small:  # `<oid> blob <size>` LF, the content, LF
        end = data.index(b"\n", at)
        size = int(data[at:end].split()[2])
        found[oid] = data[end + 1 : end + 1 + size]
        at = end + 1 + size + 1
    return found


def _not_a_revision(since: str) -> ToolError:
    return ToolError(
        ErrorKind.INVALID_ARGUMENTS,
        f"{since!r} names no commit of this repository; give a branch, a tag, a commit, "
        "`HEAD`, `HEAD~1`, `merge-base:<branch>`, or a content_hash get_diagnostics "
        "returned (`sha256:...`).",
    )


def _failed(command: str, exit_code: int, stderr: bytes, root: Path) -> ToolError:
    message = failure_message(command, exit_code, stderr.decode("utf-8", "replace"), root)
    return ToolError(ErrorKind.GIT_FAILED, message)
