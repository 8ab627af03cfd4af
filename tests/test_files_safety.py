"""Files the daemon never reads: FIFOs, devices, sockets, folders, huge files, and files
swapped for a link while they are being read. Every tool that reads a file is tried, through
the daemon's socket; the daemon keeps answering other sessions all along."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import stat
import threading
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from codeward.daemon import files, paths
from codeward.daemon.config import Config, LspConfig
from codeward.daemon.edits.atomic import commit
from codeward.daemon.edits.plan import Basis, prepare
from codeward.daemon.files import DEFAULT_LIMIT, read_file
from codeward.protocol.errors import ErrorKind, ToolError
from tests.conftest import OpenClient
from tests.git_repos import git
from tests.intel_support import write
from tests.lsp_support import needs
from tests.rpc import RpcClient, RpcFailure

LIMIT = 64 * 1024  # this module's [lsp] max_file_bytes
SECRET = "SECRET_outside_marker"

# Every tool that reads a file, with the arguments it needs besides `path`.
READERS: list[tuple[str, dict[str, Any]]] = [
    ("get_hover_info", {"line": 1, "character": 5}),
    ("go_to_definition", {"line": 1, "character": 5}),
    ("find_references", {"line": 1, "character": 5}),
    ("find_implementations", {"line": 1, "character": 5}),
    ("get_type_definition", {"line": 1, "character": 5}),
    ("call_hierarchy", {"line": 1, "character": 5}),
    ("get_symbols", {}),
    ("get_symbols", {"scope": "workspace", "query": "x"}),
    ("get_diagnostics", {}),
    ("format_code", {"apply": False}),
    ("get_code_actions", {"line": 1}),
    ("rename_symbol", {"line": 1, "character": 5, "new_name": "y", "apply": False}),
]


@pytest.fixture
def daemon_config() -> Config:
    return Config(lsp=msgspec.structs.replace(LspConfig(), max_file_bytes=LIMIT))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder outside the root holding a secret source file."""
    folder = tmp_path / "outside"
    write(folder, {"a.py": f"def {SECRET}() -> int:\n    return 1\n", "m.py": f"{SECRET} = 1\n"})
    return folder


@contextlib.contextmanager
def fifo_rescuer(paths: list[Path]) -> Iterator[None]:
    """If the daemon ever blocks opening one of `paths` (a FIFO), open its other end after
    a while so the test fails on its deadline instead of hanging for good."""
    done = threading.Event()

    def rescue() -> None:
        while not done.wait(8.0):
            for path in paths:
                with contextlib.suppress(OSError):
                    os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))

    thread = threading.Thread(target=rescue, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


async def refused(client: RpcClient, tool: str, path: str, extra: dict[str, Any]) -> RpcFailure:
    """The tool's failure on `path`: a tool error (never -32603), within the deadline."""
    with trio.fail_after(5), pytest.raises(RpcFailure) as info:
        await client.tool(tool, path=path, **extra)
    assert info.value.code == -32000, (tool, path, info.value.message)
    return info.value


async def still_answers(other: RpcClient) -> None:
    """Another session's client is answered at once: nothing blocks the event loop."""
    with trio.fail_after(5):
        assert (await other.call("daemon/status"))["sessions"] >= 1
        assert (await other.call("lua/eval", {"source": "return 1 + 1"}))["result"] == 2


def special_files(project: Path) -> dict[str, tuple[str, ...]]:
    """Make the special files, by name, with the error kinds each may give."""
    made: dict[str, tuple[str, ...]] = {}
    os.mkfifo(project / "fifo.py")
    made["fifo.py"] = ("unsupported_file_type",)
    (project / "dir.py").mkdir()
    made["dir.py"] = ("invalid_arguments",)
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(project / "sock.py"))
    made["sock.py"] = ("unsupported_file_type",)
    with contextlib.suppress(PermissionError):  # mknod needs root (or CAP_MKNOD)
        os.mknod(project / "null.py", stat.S_IFCHR | 0o600, os.makedev(1, 3))
        made["null.py"] = ("unsupported_file_type",)
    with open(project / "huge.py", "wb") as f:  # sparse: 64 MiB of nothing, at once
        f.truncate(64 * 1024 * 1024)
    made["huge.py"] = ("unsupported_file_type",)
    (project / "over.py").write_text("x = 1\n" * (LIMIT // 6 + 1))
    made["over.py"] = ("unsupported_file_type",)
    return made


async def test_special_files_are_refused_by_every_tool(
    open_client: OpenClient, project: Path, tmp_path: Path
) -> None:
    other_root = tmp_path / "other"
    write(other_root, {"ok.py": "x = 1\n"})
    write(project, {"ok.py": "x = 1\n"})
    made = special_files(project)
    other = await open_client(other_root)
    client = await open_client(project)
    tried = 0
    with fifo_rescuer([project / "fifo.py"]):
        for name, kinds in made.items():
            for tool, extra in READERS:
                if (name, tool) == ("dir.py", "get_diagnostics"):
                    continue  # a folder's diagnostics: a fine request
                error = await refused(client, tool, name, extra)
                assert error.kind in kinds, (tool, name, error.kind, error.message)
                assert name in error.message and str(project) not in error.message
                if name in ("huge.py", "over.py"):
                    assert "MiB" in error.message or "bytes" in error.message
                    assert "max_file_bytes" in error.message
                    assert error.data["limit"] == LIMIT
                tried += 1
            await still_answers(other)
    assert tried == len(made) * len(READERS) - 1
    # Nothing needed a language server: they were all refused before.
    sessions = (await client.call("session/list"))["sessions"]
    mine = next(s for s in sessions if s["root"] == str(project))
    assert mine["servers"] == []


# -- swaps between the check and the read, made at a chosen step ----------------------------


Swap = Callable[[Path], None]


def link_out(outside: Path) -> Swap:
    def swap(path: Path) -> None:
        path.unlink()
        path.symlink_to(outside / path.name)

    return swap


def folder_out(outside: Path) -> Swap:
    def swap(path: Path) -> None:
        folder = path.parent
        folder.rename(folder.with_name(folder.name + ".old"))
        folder.symlink_to(outside)

    return swap


def link_in(path: Path) -> None:
    path.unlink()
    path.symlink_to(path.with_name("other.py"))


def to_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def grow(path: Path) -> None:
    with path.open("a") as f:
        f.write("# padding\n" * (LIMIT // 10 + 1))


def delete(path: Path) -> None:
    path.unlink()


def arm(
    monkeypatch: pytest.MonkeyPatch, root: Path, target: Path, swap: Swap, step: str
) -> list[str]:
    """Make the next `read_file` of `target` call `swap` at `step`: "resolved" (after the path
    is resolved, before anything is opened) or "checked" (after the first type and size check,
    just before the open)."""
    fired: list[str] = []
    real_resolve, real_check = files.real_path, files._check

    def resolve(path: Path | str) -> str:
        real = real_resolve(path)
        if step == "resolved" and real == str(target) and not fired:
            fired.append(step)
            swap(target)
        return real

    def check(st: os.stat_result, name: str, limit: int) -> None:
        real_check(st, name, limit)
        if step == "checked" and name == target.relative_to(root).as_posix() and not fired:
            fired.append(step)
            swap(target)

    monkeypatch.setattr(files, "real_path", resolve)
    monkeypatch.setattr(files, "_check", check)
    return fired


async def test_files_swapped_while_being_read(
    open_client: OpenClient,
    project: Path,
    outside: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    other_root = tmp_path / "other"
    write(other_root, {"ok.py": "x = 1\n"})
    other = await open_client(other_root)
    client = await open_client(project)
    variants: list[tuple[str, str, Swap, str, str]] = [
        # (name, file, swap, step, expected kind)
        ("final link out", "a.py", link_out(outside), "resolved", "path_outside_project"),
        ("final link out", "a.py", link_out(outside), "checked", "path_outside_project"),
        ("folder link out", "pkg/m.py", folder_out(outside), "resolved", "path_outside_project"),
        ("folder link out", "pkg/m.py", folder_out(outside), "checked", "path_outside_project"),
        ("link inside", "a.py", link_in, "checked", "file_not_found"),
        ("FIFO", "a.py", to_fifo, "checked", "unsupported_file_type"),
        ("grown over the limit", "a.py", grow, "checked", "unsupported_file_type"),
        ("deleted", "a.py", delete, "checked", "file_not_found"),
    ]
    tried = 0
    with fifo_rescuer([project / "a.py"]):
        for label, name, swap, step, kind in variants:
            for tool, extra in READERS:
                _reset(project)
                target = project / name
                with monkeypatch.context() as patch:
                    fired = arm(patch, project, target, swap, step)
                    error = await refused(client, tool, name, extra)
                assert fired == [step], (label, tool)
                assert error.kind == kind, (label, step, tool, error.kind, error.message)
                assert SECRET not in json.dumps(error.data) + error.message
                assert str(outside) not in error.message
                tried += 1
            await still_answers(other)
    assert tried == len(variants) * len(READERS)


def _reset(project: Path) -> None:
    """a.py, other.py and pkg/m.py as regular files again, whatever a swap left."""
    for name in ("a.py", "other.py", "pkg", "pkg.old"):
        path = project / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif os.path.lexists(path):
            path.unlink()
    write(project, {"a.py": "def x() -> int:\n    return 1\n", "other.py": "y = 2\n"})
    write(project, {"pkg/m.py": "def x() -> int:\n    return 2\n"})


# -- real swaps in a loop, on a real server ---------------------------------------------------


@needs("basedpyright")
async def test_a_file_swapped_in_a_loop_never_shows_outside_content(
    open_client: OpenClient, project: Path, outside: Path
) -> None:
    write(project, {"a.py": "def visible() -> int:\n    return 1\n"})
    client = await open_client(project)
    with trio.fail_after(60):  # the server warms up
        first = await client.tool("get_symbols", path="a.py")
    assert [s["name"] for s in first["symbols"]] == ["visible"]
    # Prepared entries: os.replace puts either in place atomically.
    regular, link = project / ".a.regular", project / ".a.link"
    stop = threading.Event()

    def flip() -> None:
        while not stop.is_set():
            (project / ".a.regular").write_text("def visible() -> int:\n    return 1\n")
            os.replace(regular, project / "a.py")
            with contextlib.suppress(FileNotFoundError):
                link.unlink()
            link.symlink_to(outside / "a.py")
            os.replace(link, project / "a.py")

    thread = threading.Thread(target=flip, daemon=True)
    thread.start()
    answered = refused_count = 0
    try:
        for i in range(100):
            tool, extra = [
                ("get_symbols", {}),
                ("get_hover_info", {"line": 1, "character": 5}),
                ("get_symbols", {"scope": "workspace", "query": "SECRET"}),
            ][i % 3]
            try:
                with trio.fail_after(20):
                    result = await client.tool(tool, path="a.py", **extra)
            except RpcFailure as failure:
                assert failure.code == -32000, failure.message
                assert SECRET not in failure.message
                refused_count += 1
            else:
                assert SECRET not in json.dumps(result), (tool, result)
                answered += 1
    finally:
        stop.set()
        thread.join()
    assert answered + refused_count == 100


# -- a document the server has open turns into a FIFO --------------------------------------


@needs("basedpyright")
async def test_an_open_document_that_becomes_a_fifo(
    open_client: OpenClient, project: Path, tmp_path: Path
) -> None:
    write(
        project,
        {"a.py": "def x() -> int:\n    return 1\n", "b.py": "def y() -> int:\n    return 2\n"},
    )
    client = await open_client(project)
    with trio.fail_after(60):
        assert (await client.tool("get_hover_info", path="a.py", line=1, character=5))[
            "status"
        ] == "found"
    (project / "a.py").unlink()
    os.mkfifo(project / "a.py")
    with fifo_rescuer([project / "a.py"]):
        # The next request flushes the change: the document is closed, never read.
        with trio.fail_after(20):
            hover = await client.tool("get_hover_info", path="b.py", line=1, character=5)
        assert hover["status"] == "found" and "y" in hover["signature"]
        error = await refused(client, "get_hover_info", "a.py", {"line": 1, "character": 5})
        assert error.kind == "unsupported_file_type" and "FIFO" in error.message
        error = await refused(client, "get_diagnostics", "a.py", {})
        assert error.kind == "unsupported_file_type"
        # The same for a document grown over the limit.
        (project / "b.py").write_text("y = 1\n" * (LIMIT // 6 + 1))
        error = await refused(client, "get_hover_info", "b.py", {"line": 1, "character": 1})
        assert error.kind == "unsupported_file_type" and "max_file_bytes" in error.message


# -- the reader itself, and edits ---------------------------------------------------------


def test_read_file_refuses_what_is_not_a_plain_file_inside(project: Path, outside: Path) -> None:
    write(project, {"a.py": "x = 1\n", "pkg/b.py": "y = 2\n"})
    (project / "out.py").symlink_to(outside / "a.py")
    (project / "outdir").symlink_to(outside)
    (project / "in.py").symlink_to(project / "a.py")
    os.mkfifo(project / "f.py")
    data, st = read_file(project / "a.py", project, 100)
    assert data == b"x = 1\n" and stat.S_ISREG(st.st_mode)
    assert read_file(project / "in.py", project, 100)[0] == b"x = 1\n"  # a link inside is fine
    assert read_file(f"{project}/pkg/../a.py", project, 100)[0] == b"x = 1\n"
    cases: list[tuple[str | Path, ErrorKind]] = [
        (project / "out.py", ErrorKind.PATH_OUTSIDE_PROJECT),
        (project / "outdir" / "m.py", ErrorKind.PATH_OUTSIDE_PROJECT),
        (outside / "a.py", ErrorKind.PATH_OUTSIDE_PROJECT),
        (project / "f.py", ErrorKind.UNSUPPORTED_FILE_TYPE),
        (project / "pkg", ErrorKind.INVALID_ARGUMENTS),
        (project / "missing.py", ErrorKind.FILE_NOT_FOUND),
        (project / "a.py" / "x", ErrorKind.FILE_NOT_FOUND),
    ]
    for path, kind in cases:
        with pytest.raises(ToolError) as info:
            read_file(path, project, 100)
        assert info.value.kind is kind, path
        assert str(outside) not in info.value.message
    with pytest.raises(ToolError) as info:
        read_file(project / "a.py", project, 5)
    assert info.value.kind is ErrorKind.UNSUPPORTED_FILE_TYPE
    assert info.value.details == {"path": "a.py", "size": 6, "limit": 5}
    # A server's standard-library stub outside the root may be read when asked for.
    assert read_file(outside / "m.py", project, 100, outside=True)[0].startswith(b"SECRET")
    with pytest.raises(ToolError):
        read_file(outside, project, 100, outside=True)
    assert LspConfig().max_file_bytes == DEFAULT_LIMIT == 8 * 1024 * 1024


def test_edits_never_read_or_overwrite_special_files(project: Path) -> None:
    write(project, {"a.py": "x = 1\n"})
    os.mkfifo(project / "f.py")
    uri = (project / "a.py").as_uri()

    def edit(target: str) -> dict[str, Any]:
        return {
            "changes": {
                target: [
                    {
                        "range": {
                            "start": {"line": 0, "character": 0},
                            "end": {"line": 0, "character": 1},
                        },
                        "newText": "z",
                    }
                ]
            }
        }

    with pytest.raises(ToolError) as info:
        prepare(project, edit((project / "f.py").as_uri()), "utf-16", Basis())
    assert info.value.kind is ErrorKind.LSP_ERROR and "not a regular file" in info.value.message
    with pytest.raises(ToolError) as info:
        prepare(project, edit(uri), "utf-16", Basis(), limit=3)
    assert info.value.kind is ErrorKind.UNSUPPORTED_FILE_TYPE
    # Planned on a regular file, which then becomes a FIFO: stale, nothing written or hung.
    plan = prepare(project, edit(uri), "utf-16", Basis())
    (project / "a.py").unlink()
    os.mkfifo(project / "a.py")
    with fifo_rescuer([project / "a.py"]), pytest.raises(ToolError) as info:
        commit(plan)
    assert info.value.kind is ErrorKind.STALE_EDIT
    assert stat.S_ISFIFO(os.lstat(project / "a.py").st_mode)


def test_real_path_looks_again_when_a_link_changes_under_it(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python's realpath raises when a link is replaced between its lstat and its readlink;
    resolving looks again, and a path that never settles is a tool error, never -32603."""
    write(project, {"a.py": "x = 1\n"})
    monkeypatch.setattr(paths, "_O_PATH", 0)
    real = os.path.realpath
    failures = [OSError(22, "Invalid argument")]

    def flaky(path: Any) -> str:
        if failures:
            raise failures.pop()
        return real(path)

    monkeypatch.setattr(os.path, "realpath", flaky)
    assert paths.real_path(project / "a.py") == str(project / "a.py")
    failures.extend(OSError(22, "Invalid argument") for _ in range(5))
    with pytest.raises(ToolError) as info:
        paths.resolve_input_path(project, "a.py")
    assert info.value.kind is ErrorKind.FILE_NOT_FOUND


async def test_a_project_config_that_is_not_a_plain_file(
    open_client: OpenClient, tmp_path: Path, outside: Path
) -> None:
    """`.codeward.toml` is read like any project file: a FIFO there never blocks opening the
    session, and a link out of the project or a folder is refused, not followed."""
    other_root = tmp_path / "other"
    write(other_root, {"ok.py": "x = 1\n"})
    other = await open_client(other_root)
    client = await open_client()
    (outside / "policy.toml").write_text('[policy]\ngit_write = "deny"\n')
    makers: dict[str, Callable[[Path], None]] = {
        "FIFO": os.mkfifo,
        "folder": lambda p: p.mkdir(),
        "link out": lambda p: p.symlink_to(outside / "policy.toml"),
        "too large": lambda p: p.write_text("#" * (1024 * 1024 + 1)),
    }
    for label, make in makers.items():
        root = tmp_path / label.replace(" ", "-")
        root.mkdir()
        make(root / ".codeward.toml")
        rescue = fifo_rescuer([root / ".codeward.toml"])
        with rescue, trio.fail_after(5), pytest.raises(RpcFailure) as info:
            await client.call("session/open", {"root": str(root)})
        assert info.value.kind == "invalid_arguments", label
        assert ".codeward.toml" in info.value.message and str(outside) not in info.value.message
        await still_answers(other)
    # A regular one still narrows the policy.
    root = tmp_path / "plain"
    write(root, {".codeward.toml": '[policy]\ngit_write = "deny"\n'})
    assert (await client.call("session/open", {"root": str(root)}))["root"] == str(root)


async def test_a_nested_gitfile_that_is_a_fifo(open_client: OpenClient, project: Path) -> None:
    """The repository scan reads a nested repository's `.git` file like any project file:
    a FIFO there is skipped, never waited on, and git answers."""
    git(project, "init", "-q")
    write(project, {"a.py": "x = 1\n"})
    git(project, "add", "a.py")
    git(project, "commit", "-qm", "one")
    head = git(project, "rev-parse", "HEAD").strip()
    git(project, "update-index", "--add", "--cacheinfo", f"160000,{head},sub")
    (project / "sub").mkdir()
    os.mkfifo(project / "sub" / ".git")
    client = await open_client(project)
    with fifo_rescuer([project / "sub" / ".git"]), trio.fail_after(5):
        result = await client.tool("git_command", subcommand="log", args=["--oneline", "-1"])
    assert result["exit_code"] == 0 and "one" in result["output"]


def test_a_file_is_read_in_one_piece_of_its_size_and_whatever_it_grew_by_after(
    project: Path,
) -> None:
    write(project, {"a.py": "x = 1\n"})
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        data, _ = read_file(project / "a.py", project, DEFAULT_LIMIT)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert data == b"x = 1\n"
    assert peak < 16 * 1024  # never a 64 KiB read shrunk to six bytes (a hole in the heap)
    fd = os.open(project / "a.py", os.O_RDONLY)
    try:  # the file grew after fstat said 2 bytes: the rest is read too, within the limit
        assert files._read(fd, 2, 100, "a.py") == b"x = 1\n"
        os.lseek(fd, 0, os.SEEK_SET)
        with pytest.raises(ToolError) as info:
            files._read(fd, 2, 4, "a.py")
        assert info.value.details == {"path": "a.py", "size": 6, "limit": 4}
    finally:
        os.close(fd)
