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
from codeward.protocol.render.notes import notes
from tests.lsp_support import needs, real_config, running

WRONG = 'import os\n\nvalue: int = "not an int"\n'  # a type error, and an unused import
FILES = {
    "src/pkg/__init__.py": "",
    "src/pkg/core.py": WRONG,
    "src/gen/generated.py": WRONG,
    "src/vendor/lib.py": WRONG,
    "tools/script.py": WRONG,
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


def project(root: Path, files: dict[str, str]) -> Path:
    for name, text in {**FILES, **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


async def cli_errors(root: Path) -> set[str]:
    """The files with errors the basedpyright CLI reports for the project at `root`."""
    program = Path(sys.executable).with_name("basedpyright")
    done = await trio.run_process(
        [str(program), "--outputjson"], cwd=root, capture_stdout=True, capture_stderr=True,
        check=False, env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    found = json.loads(done.stdout)["generalDiagnostics"]
    return {Path(d["file"]).relative_to(root).as_posix() for d in found if d["severity"] == "error"}


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
    names = ["a.py", ".hidden/h.py", "x/node_modules/n.py", "env1/lib/v.py", "gen/g.py"]
    (root / "env1").mkdir()
    (root / "env1" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    paths = [root / n for n in names]
    based = Scope("basedpyright", "pyproject.toml", exclude=("gen",))
    analysed = [p.relative_to(root).as_posix() for p in based.split(root, paths).analysed]
    assert analysed == ["a.py"]  # basedpyright: the defaults besides its own `exclude`
    pyright = Scope("pyright", "pyproject.toml", exclude=("gen",))
    analysed = [p.relative_to(root).as_posix() for p in pyright.split(root, paths).analysed]
    assert analysed == ["a.py", ".hidden/h.py", "x/node_modules/n.py", "env1/lib/v.py"]
    defaults = Scope("pyright").split(root, paths)  # pyright with no `exclude`: the defaults
    assert [p.relative_to(root).as_posix() for p in defaults.analysed] == ["a.py", "gen/g.py"]


@needs("basedpyright", "ruff")
async def test_project_diagnostics_keep_to_the_configured_project(tmp_path: Path) -> None:
    root = project(tmp_path / "p", {"pyproject.toml": PYPROJECT})
    expected = await cli_errors(root)
    assert expected == {"src/pkg/core.py"}  # not the excluded, ignored or outside files
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
        assert {d.file for d in answer.diagnostics if d.source == "Ruff"} == EVERY
        assert coverage(answer) == {"basedpyright": (2, 2, 2, 1), "ruff": (5, 5, None, None)}
        [based] = [s for s in answer.servers if s.name == "basedpyright"]
        assert based.complete and based.config == "pyproject.toml" and not answer.partial
        assert answer.unchecked == 0
        with trio.fail_after(60):
            src = await manager.workspace_diagnostics(["python"], root / "src")
        assert errors_of(src, "basedpyright") == expected
        assert coverage(src)["basedpyright"] == (2, 2, 1, 1)
        shown = {"servers": [{"name": "basedpyright", "files_checked": 2, "files_total": 2,
                 "complete": True, "files_excluded": 2, "files_ignored": 1,
                 "config": "pyproject.toml"}, {"name": "ruff", "files_checked": 5,
                 "files_total": 5, "complete": True}], "count": 5}  # fmt: skip
        assert (
            "checked: basedpyright: all (2 files excluded, 1 ignored by pyproject.toml); ruff: all"
        ) in notes("diagnostics", shown)


@needs("basedpyright")
async def test_pyrightconfig_json_wins_over_pyproject(tmp_path: Path) -> None:
    files = {"pyproject.toml": PYPROJECT, "pyrightconfig.json": '{"include": ["tools"]}'}
    root = project(tmp_path / "p", files)
    expected = await cli_errors(root)
    assert expected == {"tools/script.py"}
    async with running(root, real_config()) as (manager, _):
        with trio.fail_after(60):
            answer = await manager.workspace_diagnostics(["python"])
        assert errors_of(answer, "basedpyright") == expected
        [based] = [s for s in answer.servers if s.name == "basedpyright"]
        assert (based.files_checked, based.files_excluded, based.files_ignored) == (1, 4, None)
        assert based.config == "pyrightconfig.json"


@needs("basedpyright")
async def test_a_configuration_that_cannot_be_read_leaves_the_whole_root(tmp_path: Path) -> None:
    files = {"pyproject.toml": PYPROJECT, "pyrightconfig.json": '{"include": ["src"'}
    root = project(tmp_path / "p", files)
    expected = await cli_errors(root)
    assert expected == EVERY  # the CLI reports the error and checks the whole root
    async with running(root, real_config()) as (manager, _):
        with trio.fail_after(60):
            answer = await manager.workspace_diagnostics(["python"])
        assert errors_of(answer, "basedpyright") == expected
        [based] = [s for s in answer.servers if s.name == "basedpyright"]
        assert (based.files_checked, based.files_total, based.files_excluded) == (5, 5, None)
        assert based.config == "pyrightconfig.json" and based.config_error is not None
        assert based.config_error.startswith("pyrightconfig.json could not be read (")
        shown = {"servers": [{"name": "basedpyright", "files_checked": 5, "files_total": 5,
                 "complete": True, "config": "pyrightconfig.json",
                 "config_error": based.config_error}]}  # fmt: skip
        [checked] = [n for n in notes("diagnostics", shown) if n.startswith("checked:")]
        assert checked == f"checked: basedpyright: all ({based.config_error}: the whole root taken)"
