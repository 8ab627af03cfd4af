"""Pure parsers of git's machine formats into JSON-able data.

Each parser reads the output of a command whose format the daemon chose (NUL-separated
wherever git offers it), so that any character in a path or a message parses the same.
"""

from __future__ import annotations

import re
from typing import Any

# `git log -z --format=LOG_FORMAT`: fields NUL-separated, commits NUL-separated.
LOG_FIELDS = (
    "hash", "parents", "author", "email", "date", "committer", "committer_email",
    "committer_date", "subject", "body",
)  # fmt: skip
LOG_FORMAT = "%H%x00%P%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%s%x00%b"
# `git branch --format=BRANCH_FORMAT`: each record ends with NUL then a newline.
BRANCH_FORMAT = (
    "%(HEAD)%00%(refname)%00%(objectname)%00%(upstream:short)%00%(upstream:track,nobracket)%00"
)
TAG_FORMAT = "%(refname)%00%(objecttype)%00%(objectname)%00%(*objectname)%00%(contents:subject)%00"
STASH_FORMAT = "%gd%x00%H%x00%aI%x00%gs"

_STATUS_WORDS = {
    "M": "modified",
    "T": "type_changed",
    "A": "added",
    "D": "deleted",
    "R": "renamed",
    "C": "copied",
    "U": "unmerged",
    "X": "unknown",
}
_CONFLICT_WORDS = {
    "DD": "both_deleted",
    "AU": "added_by_us",
    "UD": "deleted_by_them",
    "UA": "added_by_them",
    "DU": "deleted_by_us",
    "AA": "both_added",
    "UU": "both_modified",
}
_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@ ?(.*)")
_C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _tokens(data: bytes) -> list[str]:
    """NUL-separated tokens, without the empty one after a final NUL."""
    parts = _text(data).split("\x00")
    if parts and parts[-1] == "":
        parts.pop()
    return parts


# --- status -----------------------------------------------------------------------------


def parse_status(data: bytes) -> dict[str, Any]:
    """`git status --porcelain=v2 -z --branch`: branch, staged, unstaged, untracked, ..."""
    branch: dict[str, Any] = {
        "head": None, "oid": None, "detached": False, "upstream": None, "ahead": 0, "behind": 0,
    }  # fmt: skip
    result: dict[str, Any] = {
        "branch": branch, "staged": [], "unstaged": [], "untracked": [], "ignored": [],
        "conflicted": [],
    }  # fmt: skip
    tokens = _tokens(data)
    i = 0
    while i < len(tokens):
        record = tokens[i]
        i += 1
        kind = record[:1]
        if kind == "#":
            _status_header(record, branch)
        elif kind == "1":
            fields = record.split(" ", 8)
            _status_entry(result, fields[1], fields[8], None)
        elif kind == "2":
            fields = record.split(" ", 9)
            orig = tokens[i] if i < len(tokens) else None
            i += 1
            _status_entry(result, fields[1], fields[9], orig, fields[8])
        elif kind == "u":
            fields = record.split(" ", 10)
            word = _CONFLICT_WORDS.get(fields[1], "unmerged")
            result["conflicted"].append({"path": fields[10], "status": word})
        elif kind == "?":
            result["untracked"].append(record[2:])
        elif kind == "!":
            result["ignored"].append(record[2:])
    result["clean"] = not any(result[k] for k in ("staged", "unstaged", "untracked", "conflicted"))
    return result


def _status_header(record: str, branch: dict[str, Any]) -> None:
    _, _, rest = record.partition(" ")
    key, _, value = rest.partition(" ")
    if key == "branch.oid":
        branch["oid"] = None if value == "(initial)" else value
    elif key == "branch.head":
        branch["detached"] = value == "(detached)"
        branch["head"] = None if branch["detached"] else value
    elif key == "branch.upstream":
        branch["upstream"] = value
    elif key == "branch.ab":
        ahead, _, behind = value.partition(" ")
        branch["ahead"] = int(ahead.lstrip("+") or 0)
        branch["behind"] = int(behind.lstrip("-") or 0)


def _status_entry(
    result: dict[str, Any], xy: str, path: str, orig: str | None, score: str = ""
) -> None:
    for letter, bucket in ((xy[0], "staged"), (xy[1:2], "unstaged")):
        if letter in ("", "."):
            continue
        entry: dict[str, Any] = {"path": path, "status": _STATUS_WORDS.get(letter, letter)}
        if orig is not None and letter in "RC":
            entry["orig_path"] = orig
            entry["similarity"] = int(score[1:]) if score[1:].isdigit() else None
        result[bucket].append(entry)


# --- diff -------------------------------------------------------------------------------


def parse_diff(data: bytes) -> list[dict[str, Any]]:
    """`git diff --raw --numstat -p -z`: files with status, counts, binary flag and hunks."""
    files, patch = split_diff(data)
    by_path: dict[str, dict[str, Any]] = {}
    for entry in files:
        by_path.setdefault(entry["path"], entry)
    _parse_patch(_text(patch), by_path)
    return files


def diff_patch(data: bytes) -> bytes:
    """The patch of `git diff --raw --numstat -p -z` output: what `git diff` itself prints."""
    return split_diff(data)[1]


def split_diff(data: bytes) -> tuple[list[dict[str, Any]], bytes]:
    """The files of the raw and numstat records (without hunks), and the patch after them."""
    files: list[dict[str, Any]] = []
    by_path: dict[str, dict[str, Any]] = {}
    pos = 0

    def token() -> str | None:
        nonlocal pos
        end = data.find(b"\x00", pos)
        if end < 0:
            return None
        value = _text(data[pos:end])
        pos = end + 1
        return value

    numstat_first: str | None = None
    while (tok := token()) is not None:
        if not tok.startswith(":"):
            numstat_first = tok
            break
        status = tok.split(" ")[-1]
        letter = status[:1]
        first = token() or ""
        entry: dict[str, Any] = {
            "path": first, "old_path": None, "status": _STATUS_WORDS.get(letter, letter),
            "additions": 0, "deletions": 0, "binary": False, "hunks": [],
        }  # fmt: skip
        if letter in ("R", "C"):
            entry["old_path"] = first
            entry["path"] = token() or ""
            entry["similarity"] = int(status[1:]) if status[1:].isdigit() else None
        files.append(entry)
        by_path.setdefault(entry["path"], entry)
    tok = numstat_first
    while tok:
        added, _, rest = tok.partition("\t")
        deleted, _, path = rest.partition("\t")
        if not path:  # a rename or copy: the two paths follow as their own tokens
            token()
            path = token() or ""
        stat = by_path.get(path)
        if stat is not None:
            stat["binary"] = added == "-"
            stat["additions"] = int(added) if added.isdigit() else 0
            stat["deletions"] = int(deleted) if deleted.isdigit() else 0
        tok = token()
    return files, data[pos:]


def _parse_patch(patch: str, by_path: dict[str, dict[str, Any]]) -> None:
    lines = patch.split("\n")
    current: dict[str, Any] | None = None
    header_path: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if line.startswith("diff --git "):
            header_path = _header_new_path(line[len("diff --git ") :])
            current = by_path.get(header_path) if header_path is not None else None
        elif line.startswith(("rename to ", "copy to ")) and current is None:
            current = by_path.get(unquote_c(line.split(" ", 2)[2]))
        elif line.startswith("+++ ") and current is None:
            target = unquote_c(line[4:].rstrip("\t"))
            current = by_path.get(target.removeprefix("b/"))
        elif line.startswith("Binary files ") and current is not None:
            current["binary"] = True
        elif line.startswith("@@ ") and current is not None:
            match = _HUNK.match(line)
            if match is None:
                continue
            old_start, old_n, new_start, new_n, heading = match.groups()
            hunk = {
                "old_start": int(old_start), "old_lines": int(old_n or 1),
                "new_start": int(new_start), "new_lines": int(new_n or 1), "heading": heading,
            }  # fmt: skip
            current["hunks"].append(hunk)
            i = _skip_hunk(lines, i, hunk["old_lines"], hunk["new_lines"])


def _skip_hunk(lines: list[str], i: int, old: int, new: int) -> int:
    """The index after a hunk's body, counted from its header's line ranges."""
    while i < len(lines) and (old > 0 or new > 0):
        first = lines[i][:1]
        if first == "-":
            old -= 1
        elif first == "+":
            new -= 1
        elif first in (" ", ""):
            old -= 1
            new -= 1
        i += 1
    while i < len(lines) and lines[i].startswith("\\"):
        i += 1
    return i


def _header_new_path(rest: str) -> str | None:
    """The `b/` path of a `diff --git a/X b/Y` header, or None when it is ambiguous."""
    if rest.endswith('"'):
        start = rest.rfind(' "')
        while start > 0:
            candidate = rest[start + 1 :]
            try:
                return unquote_c(candidate).removeprefix("b/")
            except ValueError:
                start = rest.rfind(' "', 0, start)
        return None
    if rest.startswith("a/") and len(rest) % 2 == 1:  # a/X b/X: same path on both sides
        half = (len(rest) - 1) // 2
        old, new = rest[2:half], rest[half + 3 :]
        if rest[half : half + 3] == " b/" and old == new:
            return new
    return None


def unquote_c(text: str) -> str:
    """Undo git's C-style quoting of a path (`"a\\tb\\303\\251"`); plain text is returned as is."""
    if not (len(text) >= 2 and text.startswith('"') and text.endswith('"')):
        return text
    body = text[1:-1]
    out = bytearray()
    i = 0
    while i < len(body):
        char = body[i]
        if char == '"':
            raise ValueError("unescaped quote in a quoted path")
        if char != "\\":
            out += char.encode("utf-8")
            i += 1
            continue
        nxt = body[i + 1 : i + 2]
        if nxt in _C_ESCAPES:
            out.append(_C_ESCAPES[nxt])
            i += 2
        elif body[i + 1 : i + 4].isdigit() and len(body[i + 1 : i + 4]) == 3:
            out.append(int(body[i + 1 : i + 4], 8) & 0xFF)
            i += 4
        else:
            raise ValueError("bad escape in a quoted path")
    return out.decode("utf-8", "replace")


# --- log, show --------------------------------------------------------------------------


def parse_log(data: bytes) -> list[dict[str, Any]]:
    """`git log -z --format=LOG_FORMAT`: one dict per commit; any message character is safe."""
    tokens = _text(data).split("\x00")
    n = len(LOG_FIELDS)
    if len(tokens) % n == 1 and tokens[-1] == "":
        tokens.pop()
    commits = []
    for start in range(0, len(tokens) - n + 1, n):
        record = dict(zip(LOG_FIELDS, tokens[start : start + n], strict=True))
        parents = record["parents"]
        commits.append({**record, "parents": parents.split() if parents else []})
    return commits


# --- branch, tag, stash, remote ---------------------------------------------------------


def _records(data: bytes, width: int) -> list[list[str]]:
    """Records of `width` NUL-terminated fields, each record followed by a newline."""
    tokens = _text(data).split("\x00")
    records = []
    for start in range(0, len(tokens) - width + 1, width):
        fields = tokens[start : start + width]
        fields[0] = fields[0].removeprefix("\n")
        records.append(fields)
    return records


def parse_branches(data: bytes) -> dict[str, Any]:
    """`git branch --all --format=BRANCH_FORMAT`: current, local (with upstream), remote."""
    result: dict[str, Any] = {"current": None, "detached": False, "local": [], "remote": []}
    for head, ref, oid, upstream, track in _records(data, 5):
        current = head == "*"
        if ref.startswith("refs/heads/"):
            name = ref.removeprefix("refs/heads/")
            ahead, behind, gone = _track(track)
            result["local"].append({
                "name": name, "oid": oid, "current": current, "upstream": upstream or None,
                "ahead": ahead, "behind": behind, "upstream_gone": gone,
            })  # fmt: skip
            if current:
                result["current"] = name
        elif ref.startswith("refs/remotes/"):
            result["remote"].append({"name": ref.removeprefix("refs/remotes/"), "oid": oid})
        elif current:  # "(HEAD detached at ...)"
            result["detached"] = True
            result["head_oid"] = oid
    return result


def _track(track: str) -> tuple[int, int, bool]:
    ahead = behind = 0
    for part in track.split(","):
        word, _, count = part.strip().partition(" ")
        if word == "ahead" and count.isdigit():
            ahead = int(count)
        elif word == "behind" and count.isdigit():
            behind = int(count)
    return ahead, behind, track.strip() == "gone"


def parse_tags(data: bytes) -> list[dict[str, Any]]:
    """`git tag --list --format=TAG_FORMAT`: name, annotated, the object and its commit."""
    tags = []
    for ref, kind, oid, peeled, subject in _records(data, 5):
        annotated = kind == "tag"
        tags.append({
            "name": ref.removeprefix("refs/tags/"), "annotated": annotated, "oid": oid,
            "commit": peeled if annotated else oid, "subject": subject,
        })  # fmt: skip
    return tags


def parse_stash_list(data: bytes) -> list[dict[str, Any]]:
    """`git stash list -z --format=STASH_FORMAT`: ref, hash, date, message."""
    tokens = _text(data).split("\x00")
    if len(tokens) % 4 == 1 and tokens[-1] == "":
        tokens.pop()
    return [
        {"ref": ref, "hash": oid, "date": date, "message": message, "index": _stash_index(ref)}
        for ref, oid, date, message in zip(*[iter(tokens)] * 4, strict=False)
    ]


def _stash_index(ref: str) -> int | None:
    digits = ref.removeprefix("stash@{").removesuffix("}")
    return int(digits) if digits.isdigit() else None


def parse_remotes(data: bytes) -> list[dict[str, Any]]:
    """`git remote -v`: each remote's fetch and push URLs."""
    remotes: dict[str, dict[str, Any]] = {}
    for line in _text(data).splitlines():
        name, sep, rest = line.partition("\t")
        if not sep:
            continue
        entry = remotes.setdefault(name, {"name": name, "fetch_url": None, "push_url": None})
        for suffix, key in ((" (fetch)", "fetch_url"), (" (push)", "push_url")):
            if rest.endswith(suffix):
                entry[key] = rest.removesuffix(suffix)
    return list(remotes.values())
