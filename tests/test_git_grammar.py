"""Every option codeward accepts is parsed with the arity the real git gives it.

parse-options commands list each option's arity in `git <sub> --help-all`; log, show and
diff parse revision options by hand, so git is driven to show the arity: a required value
consumes the next argument, an optional one or none never does (git then complains about
the next argument as an unknown revision).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from codeward.daemon.git.grammar import Arity, Option
from codeward.daemon.git.tables import DIFF, REVISION, SPECS
from tests.git_repos import commit_all, git, make_repo, write

# Where git prints the options of a subcommand; several listings for commands with actions.
HELP_LISTINGS: dict[str, list[list[str]]] = {
    "stash": [["stash", a] for a in ("push", "pop", "apply", "drop", "show")],
    "remote": [["remote"]]
    + [["remote", a] for a in ("add", "get-url", "set-url", "show", "prune", "rename",
                               "set-head", "set-branches", "update")],
}  # fmt: skip
REVISION_PARSED = ("log", "show", "diff")
SAMPLE_VALUES = {"--no-walk": "sorted"}  # where git checks an optional value, a valid one
HELP_PARSED = sorted(set(SPECS) - set(REVISION_PARSED) - {"shortlog", "rev-parse"})
_LINE = re.compile(
    r"^ {2,}(?:-(?P<short>[^-\s,\[])(?P<sarg>\[[^\]]*\]| \S+)?)?(?:, )?"
    r"(?:--(?P<long>[\w-]+)(?P<larg>\[=.*?\](?=\s|$)|\[=.*|\[.*?\]| \S+)?)?"
)
CANARY = "no-such-canary"


def _arity(text: str | None) -> Arity:
    if not text:
        return Arity.NONE
    return Arity.OPTIONAL if text.startswith("[") else Arity.REQUIRED


def help_arities(cwd: Path, *command: str) -> dict[str, Arity]:
    """`-x`/`--long` -> arity, from the option listing of `git <command> --help-all`."""
    done = subprocess.run(
        ["git", *command, "--help-all"], cwd=cwd, capture_output=True, text=True, timeout=30
    )
    found: dict[str, Arity] = {}
    for line in (done.stdout + done.stderr).splitlines():
        match = _LINE.match(line)
        if match is None or not re.match(r"^ {2,}-", line):
            continue
        long_arity = _arity(match["larg"])
        if match["long"]:
            found[f"--{match['long']}"] = long_arity
        if match["short"]:
            found[f"-{match['short']}"] = long_arity if match["long"] else _arity(match["sarg"])
    assert found, f"git {' '.join(command)} --help-all listed no options"
    return found


def listed_arity(spelled: str, listings: Iterable[dict[str, Arity]]) -> set[Arity]:
    """The arities git lists for `spelled`, allowing parse-options' `--no-` negations."""
    got: set[Arity] = set()
    for listing in listings:
        if spelled in listing:
            got.add(listing[spelled])
        elif f"--{spelled.removeprefix('--no-')}" in listing or (f"--no-{spelled[2:]}" in listing):
            got.add(Arity.NONE)  # parse-options' negation, which takes no value
    return got


def expected(option: Option) -> Arity:
    return Arity.REQUIRED if option.arity is Arity.ATTACHED else option.arity


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_repo(tmp_path_factory.mktemp("grammar") / "repo")
    git(root, "config", "user.name", "T")
    git(root, "config", "user.email", "t@example.com")
    write(root, "a.txt", "one\n")
    commit_all(root, "first")
    write(root, "a.txt", "two\n")
    return root


@pytest.mark.parametrize("subcommand", HELP_PARSED)
def test_parse_options_commands_match_git_help(repo: Path, subcommand: str) -> None:
    commands = HELP_LISTINGS.get(subcommand, [[subcommand]])
    listings = [help_arities(repo, *command) for command in commands]
    wrong = {}
    for spelled, option in SPECS[subcommand].options.items():
        got = listed_arity(spelled, listings)
        log = {**DIFF, **REVISION}  # `stash show` and `stash list` pass them to diff and log
        if subcommand == "stash" and not got and spelled in log:
            got = {expected(log[spelled])}
        if got != {expected(option)}:
            wrong[spelled] = (expected(option).value, sorted(a.value for a in got))
    assert not wrong, wrong


def test_shortlog_own_options_match_git_help(repo: Path) -> None:
    listing = help_arities(repo, "shortlog")
    own = {k: v for k, v in SPECS["shortlog"].options.items() if k in listing}
    assert {"-n", "-s", "-e", "-c", "-w", "--group"} <= set(own)
    assert {k: expected(v) for k, v in own.items()} == {k: listing[k] for k in own}


def _probe(repo: Path, subcommand: str, spelled: str) -> tuple[bool, str]:
    """Whether git takes the argument after `spelled` as its value; and what `=x` says."""
    done = subprocess.run(
        ["git", subcommand, spelled, CANARY], cwd=repo, capture_output=True, text=True, timeout=30
    )
    consumed = f"ambiguous argument '{CANARY}'" not in done.stderr
    attached = ""
    if spelled.startswith("--"):
        value = SAMPLE_VALUES.get(spelled, "x")
        eq = subprocess.run(
            ["git", subcommand, f"{spelled}={value}"], cwd=repo, capture_output=True,
            text=True, timeout=30,
        )  # fmt: skip
        attached = eq.stderr
    return consumed, attached


_NO_VALUE = ("unrecognized argument", "takes no value", "invalid option")


@pytest.mark.parametrize("subcommand", REVISION_PARSED)
def test_revision_commands_match_what_git_does(repo: Path, subcommand: str) -> None:
    table = SPECS[subcommand].options
    with ThreadPoolExecutor(4) as pool:
        found = pool.map(lambda s: _probe(repo, subcommand, s), table)
        probes = dict(zip(table, found, strict=True))
    wrong = {}
    for spelled, option in table.items():
        consumed, attached = probes[spelled]
        if consumed != (option.arity is Arity.REQUIRED):
            wrong[spelled] = f"{option.arity.value}, but git consumed the next: {consumed}"
        elif spelled.startswith("--") and option.arity is Arity.NONE:
            if not any(text in attached for text in _NO_VALUE):
                wrong[spelled] = f"none, but git took `=x`: {attached!r}"
        elif spelled.startswith("--") and any(text in attached for text in _NO_VALUE[:2]):
            wrong[spelled] = f"{option.arity.value}, but git refused `=x`: {attached!r}"
    assert not wrong, wrong
    assert len(probes) >= 90


def test_rev_parse_values(repo: Path) -> None:
    """rev-parse echoes what it does not know, so its few valued options are driven."""
    table = SPECS["rev-parse"].options
    head = git(repo, "rev-parse", "HEAD").strip()
    assert table["--default"].arity is Arity.REQUIRED
    assert git(repo, "rev-parse", "--default", "HEAD").strip() == head  # consumed
    for spelled, value in (("--short", "7"), ("--abbrev-ref", "strict")):
        assert table[spelled].arity is Arity.OPTIONAL
        assert git(repo, "rev-parse", spelled, "HEAD").strip() in (head[:7], "main")
        assert git(repo, "rev-parse", f"{spelled}={value}", "HEAD").strip() in (head[:7], "main")
    for spelled in ("--branches", "--tags", "--remotes"):
        assert table[spelled].arity is Arity.OPTIONAL
        assert git(repo, "rev-parse", spelled, "HEAD").strip().endswith(head)
    for spelled in ("--glob", "--exclude"):
        assert table[spelled].arity is Arity.ATTACHED
        assert git(repo, "rev-parse", f"{spelled}=refs/heads/*").strip() in (head, "")


def test_an_optional_value_never_eats_a_write_option(repo: Path) -> None:
    """The issue's attack, against git itself: `--relative` would make `--output` its value
    if codeward thought it took one; git parses `--output=FILE` and writes the file."""
    out = repo / "written.txt"
    git(repo, "log", "-1", "--format=%H", "--relative", f"--output={out.name}")
    assert out.exists()
    out.unlink()
