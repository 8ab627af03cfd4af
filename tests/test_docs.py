"""The README and docs/ stand alone: what they name exists, and the protocol page is complete."""

from __future__ import annotations

import re
from pathlib import Path

import codeward.daemon.tools.all  # noqa: F401  (registers the tools)
from codeward.daemon.handlers import HANDLERS
from codeward.daemon.tools.registry import REGISTRY
from codeward.protocol.errors import ErrorKind

TOP = Path(__file__).resolve().parent.parent
README = (TOP / "README.md").read_text(encoding="utf-8")
PROTOCOL = (TOP / "docs" / "PROTOCOL.md").read_text(encoding="utf-8")
PAGES = {"README.md": README} | {
    f"docs/{p.name}": p.read_text(encoding="utf-8") for p in (TOP / "docs").glob("*.md")
}


def test_links_lead_to_files_of_the_repository() -> None:
    for name, text in PAGES.items():
        base = (TOP / name).parent
        for target in re.findall(r"\]\(([^)#]+)\)", text):
            if "://" in target:
                continue
            assert (base / target).exists(), f"{name} links to a missing {target}"
    assert "(docs/PROTOCOL.md)" in README


def test_no_page_points_outside_the_repository() -> None:
    for name, text in PAGES.items():
        assert "DESIGN" not in text and "shared folder" not in text, name
        assert "../shared" not in text, name


def test_protocol_page_names_every_method_tool_and_error_kind() -> None:
    for method in HANDLERS:
        assert f"`{method}`" in PROTOCOL, method
    for tool in REGISTRY:
        assert f"`{tool.name}`" in PROTOCOL, tool.name
    for kind in ErrorKind:
        assert f"`{kind.value}`" in PROTOCOL, kind.value


def test_readme_first_try_names_no_missing_file() -> None:
    first_try = README.split("a first try", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    for line in first_try.strip().splitlines():
        words = line.split("#", 1)[0].split()
        assert words[0] == ".venv/bin/codeward", line
        for word in words[1:]:
            if "/" in word or word.endswith(".py"):
                assert (TOP / word.split(":", 1)[0]).exists(), line
