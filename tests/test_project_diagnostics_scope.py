"""Project diagnostics within the type checker's configured project: basedpyright is asked
only about the files its `include` / `exclude` take in, what its `ignore` suppresses is not
reported, and the files with errors are those its own CLI (`basedpyright --outputjson`)
reports for the project; `pyrightconfig.json` wins over `pyproject.toml`, a configuration
that cannot be read leaves the whole root, and ruff still checks every file. Real
basedpyright and ruff; each test's project has a configuration of its own, which the
server reads once as it starts."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import trio

from codeward.daemon.lsp.diagnostics import FolderDiagnostics
from codeward.daemon.lsp.pyright_scope import Scope, glob_pattern, matches, pyright_scope
from codeward.protocol.render.edits import left_out
from codeward.protocol.render.notes import notes
from tests.lsp_support import needs, real_config, running

WRONG = 'import os\n\nvalue: int = "not an int"\n'  # a type error, and an unused import
FILES = {
    "src/pkg/__init__.py": "",
    "src/pkg/core.py": WRONG,
    "src/gen/generated.py": WRONG,
    "src/vendor/lib.py": WRONG,
    "tools/script.py": WRONG,
    "src/.hidden/h.py": WRONG,  # excluded by default (`**/.*`)
    "src/myenv/lib/v.py": WRONG,  # in a virtual environment
    "src/myenv/pyvenv.cfg": "home = /usr/bin\n",
}
PYPROJECT = """\
[project]
name = "p"
version = "0"

[tool.basedpyright]
include = ["src"]
exclude = ["src/gen"]
ignore = ["src/vendor"]
"""
EVERY = {"src/pkg/core.py", "src/gen/generated.py", "src/vendor/lib.py", "tools/script.py"}
WALKED = {*EVERY, "src/.hidden/h.py", "src/myenv/lib/v.py"}  # every file with errors


def project(root: Path, files: dict[str, str]) -> Path:
    for name, text in {**FILES, **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


async def cli_errors(root: Path) -> tuple[set[str], int]:
    """The files with errors the basedpyright CLI reports for the project at `root`, and
    how many files it analysed."""
    program = Path(sys.executable).with_name("basedpyright")
    done = await trio.run_process(
        [str(program), "--outputjson"], cwd=root, capture_stdout=True, capture_stderr=True,
        check=False, env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    report = json.loads(done.stdout)
    found = report["generalDiagnostics"]
    wrong = {d["file"] for d in found if d["severity"] == "error"}
    return {Path(f).relative_to(root).as_posix() for f in wrong}, report["summary"]["filesAnalyzed"]


def errors_of(answer: FolderDiagnostics, server: str) -> set[str]:
    return {d.file for d in answer.diagnostics if d.source == server and d.severity == 1}


def coverage(answer: FolderDiagnostics) -> dict[str, tuple[int, int, int | None, int | None]]:
    return {
        s.name: (s.files_checked, s.files_total, s.files_excluded, s.files_ignored)
        for s in answer.servers
    }


def test_the_scope_as_the_configuration_says(tmp_path: Path) -> None:
    root = tmp_path
    assert pyright_scope(root) == Scope("basedpyright")  # no configuration: the root
    (root / "pyproject.toml").write_text(PYPROJECT)
    scope = pyright_scope(root)
    assert (scope.config, scope.include, scope.exclude, scope.ignore) == (
        "pyproject.toml", ("src",), ("src/gen",), ("src/vendor",)
    )  # fmt: skip
    assert pyright_scope(root, "pyright") == Scope("pyright")  # it reads only [tool.pyright]
    (root / "pyrightconfig.json").write_text(
        "{\n  // comments and a trailing comma, as basedpyright takes them\n"
        '  "include": ["./lib/", "tests/typing",], /* "exclude": ["x"] */ "ignore": "x"\n}'
    )
    scope = pyright_scope(root)  # it wins over pyproject.toml; a string is not a list
    assert (scope.config, scope.include, scope.exclude, scope.ignore) == (
        "pyrightconfig.json", ("lib", "tests/typing"), (), ()
    )  # fmt: skip
    (root / "pyrightconfig.json").write_text('{"exclude": ["a//b/*", "/*c*/"], // x\n}')
    assert pyright_scope(root).exclude == ("a/b/*", "/*c*")  # comments only outside strings
    (root / "pyrightconfig.json").write_text('{"include": ["src"')
    bad = pyright_scope(root)  # the server reads it no better: the whole root
    assert bad.config == "pyrightconfig.json" and not bad.narrowed and bad.problem
    (root / "pyrightconfig.json").unlink()
    (root / "pyproject.toml").write_text('[tool.pyright]\ninclude = ["a"]\n[tool.basedpyright]\n')
    assert pyright_scope(root).problem  # basedpyright refuses both sections
    assert pyright_scope(root, "pyright").include == ("a",)

    def inside(path: str, *entries: str) -> bool:
        patterns = [p for e in entries if (p := glob_pattern(e, root)) is not None]
        return matches(path, patterns)

    assert inside("src/pkg/a.py", "src") and not inside("srcx/a.py", "src")
    assert inside("src/a.py", ".") and inside("src/a.py", "./src/") and inside("a.py", "a.py")
    assert inside("pkg/sub/m.py", "pkg/**") and inside("a/b.py", "*/b.py")
    assert not inside("a/c/b.py", "*/b.py") and inside("a/c/b.py", "**/b.py")
    assert inside("b.py", "**/b.py") and inside("x/.cache/m.py", "**/.*")
    assert inside("src/gen/m.py", "src/g?n") and not inside("src/gn/m.py", "src/g?n")
    assert not inside("src/a.py", "/elsewhere/src") and inside("src/a.py", str(root / "src"))
    assert not inside("src/a+b.py", "src/a?b.pyc") and inside("src/a+b.py", "src/a+b.py")


def test_default_excludes_and_virtual_environments(tmp_path: Path) -> None:
    root = tmp_path
    names = ["a.py", ".hidden/h.py", "x/node_modules/n.py", "env1/lib/v.py", "gen/g.py",
             "__editable__.p.py"]  # fmt: skip
    (root / "env1").mkdir()
    (root / "env1" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    paths = [root / n for n in names]
    based = Scope("basedpyright", "pyproject.toml", exclude=("gen",))
    analysed = [p.relative_to(root).as_posix() for p in based.split(root, paths).analysed]
    assert analysed == ["a.py"]  # basedpyright: the defaults besides its own `exclude`
    pyright = Scope("pyright", "pyproject.toml", exclude=("gen",))
    analysed = [p.relative_to(root).as_posix() for p in pyright.split(root, paths).analysed]
    assert analysed == ["a.py", ".hidden/h.py", "x/node_modules/n.py", "env1/lib/v.py",
                        "__editable__.p.py"]  # fmt: skip
    defaults = Scope("pyright").split(root, paths)  # pyright with no `exclude`: the defaults
    assert [p.relative_to(root).as_posix() for p in defaults.analysed] == [
        "a.py", "gen/g.py", "__editable__.p.py"
    ]  # fmt: skip


def test_a_write_names_the_exclude_of_what_it_left_out() -> None:
    scope = {"server": "basedpyright", "include": ["src"], "exclude": ["src/gen"], "count": 1,
             "files": ["src/gen/g.py"]}  # fmt: skip
    assert left_out({"unanalysed": [scope]}) == [
        "not analysed by basedpyright (include: src; exclude: src/gen): 1 file, neither "
        "checked nor renamed in: src/gen/g.py"
    ]


@needs("basedpyright", "ruff")
async def test_project_diagnostics_keep_to_the_configured_project(tmp_path: Path) -> None:
    root = project(tmp_path / "p", {"pyproject.toml": PYPROJECT})
    expected, analysed = await cli_errors(root)
    # not the excluded, ignored or outside files; the ignored one is analysed, not reported
    assert expected == {"src/pkg/core.py"} and analysed == 3
    async with running(root, real_config()) as (manager, _):
        # a file asked about on its own is checked even if excluded, and its diagnostics
        # are published: the project's answer leaves them out still
        with trio.fail_after(60):
            alone = await manager.diagnostics(root / "src/gen/generated.py")
        assert any(d.source == "basedpyright" and d.severity == 1 for d in alone.diagnostics)
        with trio.fail_after(60):
            answer = await manager.workspace_diagnostics(["python"])
        assert errors_of(answer, "basedpyright") == expected
        assert errors_of(answer, "ruff") == set()  # ruff's unused imports are warnings
        assert {d.file for d in answer.diagnostics if d.source == "Ruff"} == WALKED
        assert coverage(answer) == {"basedpyright": (2, 2, 4, 1), "ruff": (7, 7, None, None)}
        [based] = [s for s in answer.servers if s.name == "basedpyright"]
        assert based.complete and based.config == "pyproject.toml" and not answer.partial
        assert based.files_checked + (based.files_ignored or 0) == analysed  # the CLI's files
        assert answer.unchecked == 0
        with trio.fail_after(60):
            src = await manager.workspace_diagnostics(["python"], root / "src")
        assert errors_of(src, "basedpyright") == expected
        assert coverage(src)["basedpyright"] == (2, 2, 3, 1)
        shown = {"servers": [{"name": "basedpyright", "files_checked": 2, "files_total": 2,
                 "complete": True, "files_excluded": 4, "files_ignored": 1,
                 "config": "pyproject.toml"}, {"name": "ruff", "files_checked": 7,
                 "files_total": 7, "complete": True}], "count": 7}  # fmt: skip
        assert (
            "checked: basedpyright: all (4 files excluded, 1 ignored by pyproject.toml); ruff: all"
        ) in notes("diagnostics", shown)


@needs("basedpyright")
async def test_pyrightconfig_json_wins_over_pyproject(tmp_path: Path) -> None:
    files = {"pyproject.toml": PYPROJECT, "pyrightconfig.json": '{"include": ["tools"]}'}
    root = project(tmp_path / "p", files)
    expected, analysed = await cli_errors(root)
    assert expected == {"tools/script.py"} and analysed == 1
    async with running(root, real_config()) as (manager, _):
        with trio.fail_after(60):
            answer = await manager.workspace_diagnostics(["python"])
        assert errors_of(answer, "basedpyright") == expected
        [based] = [s for s in answer.servers if s.name == "basedpyright"]
        assert (based.files_checked, based.files_excluded, based.files_ignored) == (1, 6, None)
        assert based.config == "pyrightconfig.json" and based.files_checked == analysed


@needs("basedpyright")
async def test_a_configuration_that_cannot_be_read_leaves_the_whole_root(tmp_path: Path) -> None:
    files = {"pyproject.toml": PYPROJECT, "pyrightconfig.json": '{"include": ["src"'}
    root = project(tmp_path / "p", files)
    expected, analysed = await cli_errors(root)
    assert expected == EVERY and analysed == 5  # the CLI reports the error, takes the root
    async with running(root, real_config()) as (manager, _):
        with trio.fail_after(60):
            answer = await manager.workspace_diagnostics(["python"])
        assert errors_of(answer, "basedpyright") == expected
        [based] = [s for s in answer.servers if s.name == "basedpyright"]
        # the server's default excludes stand
        assert (based.files_checked, based.files_total, based.files_excluded) == (analysed, 5, 2)
        assert based.config == "pyrightconfig.json" and based.config_error is not None
        assert based.config_error.startswith("pyrightconfig.json could not be read (")
        shown = {"servers": [{"name": "basedpyright", "files_checked": 5, "files_total": 5,
                 "complete": True, "files_excluded": 2, "config": "pyrightconfig.json",
                 "config_error": based.config_error}]}  # fmt: skip
        [checked] = [n for n in notes("diagnostics", shown) if n.startswith("checked:")]
        said = f"2 files excluded, {based.config_error}: the whole root taken"
        assert checked == f"checked: basedpyright: all ({said})"
