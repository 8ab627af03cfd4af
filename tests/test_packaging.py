"""What `make run` installs, and pyproject.toml read without warnings by a recent setuptools."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
import warnings
from pathlib import Path

import pytest

from codeward.daemon.lsp.defaults import default_languages, default_servers

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
def test_make_run_installs_the_default_python_servers() -> None:
    """`make run` installs the `python` extra, which holds every default Python server."""
    plan = subprocess.run(
        ["make", "-n", "-B", "run"], cwd=TOP, capture_output=True, text=True, check=True
    ).stdout
    installs = [line for line in plan.splitlines() if "pip install" in line]
    assert any(re.search(r"-e '?\.\[python\]'?", line) for line in installs), plan
    extra = {
        re.split(r"[<>=\[ ]", spec)[0]
        for spec in PYPROJECT["project"]["optional-dependencies"]["python"]
    }
    servers = default_servers()
    for name in default_languages()["python"].servers:
        hint = servers[name].install_hint
        assert hint.startswith("pip install "), hint  # from PyPI
        assert hint.removeprefix("pip install ") in extra, name
