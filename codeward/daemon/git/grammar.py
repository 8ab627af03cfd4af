"""Git's option grammar: options with git's own arity, and arguments split the way git does.

An option table maps each exact spelling (`-f`, `--force`) to an `Option`. Anything not in
the table is refused, abbreviations included: git accepts any unique prefix of a long
option, so an allowlist of exact spellings is the only way to know what git will do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum

from codeward.protocol.errors import ErrorKind, ToolError


class Arity(Enum):
    NONE = "none"  # `--opt`, `-o` (clusters: `-fd`)
    REQUIRED = "required"  # `--opt=v`, `--opt v`, `-ov`, `-o v`
    OPTIONAL = "optional"  # `--opt`, `--opt=v`, `-o`, `-ov`: never the next argument
    ATTACHED = "attached"  # `--opt=v` only (git's revision `--format=`, `--min-parents=`)


class Kind(Enum):
    PLAIN = "plain"
    FILE = "file"  # a file git reads: inside the root (`-` is stdin)
    REMOTE = "remote"  # a configured remote name or a network URL
    STRATEGY = "strategy"  # a merge strategy: git runs `git-merge-<name>`


@dataclass(frozen=True)
class Option:
    name: str  # canonical: the long name, else the letter; tier rules use it
    arity: Arity = Arity.NONE
    kind: Kind = Kind.PLAIN


_SUFFIXES = {
    "=": (Arity.REQUIRED, Kind.PLAIN),
    "=?": (Arity.OPTIONAL, Kind.PLAIN),
    "=!": (Arity.ATTACHED, Kind.PLAIN),
    "=file": (Arity.REQUIRED, Kind.FILE),
    "=remote": (Arity.REQUIRED, Kind.REMOTE),
    "=strategy": (Arity.REQUIRED, Kind.STRATEGY),
}


def options(*entries: str) -> dict[str, Option]:
    """A table from entries such as `"f force"`, `"m message ="`, `"relative =?"`.

    Single characters are short options, longer words long ones; a last word starting with
    `=` gives the arity and kind (see `_SUFFIXES`), else the option takes no value.
    """
    table: dict[str, Option] = {}
    for entry in entries:
        words = entry.split()
        arity, kind = Arity.NONE, Kind.PLAIN
        if words[-1].startswith("="):
            arity, kind = _SUFFIXES[words.pop()]
        longs = [w for w in words if len(w) > 1]
        option = Option(longs[0] if longs else words[0], arity, kind)
        for word in words:
            spelled = f"-{word}" if len(word) == 1 else f"--{word}"
            assert spelled not in table, spelled
            table[spelled] = option
    return table


@dataclass(frozen=True)
class Spec:
    """What codeward accepts of one subcommand's arguments."""

    options: Mapping[str, Option]
    clusters: bool = True  # parse-options: `-fd` is `-f -d`; revision parsing has none
    number: str | None = None  # what `-<n>` means (`max-count`, `context`), if anything
    dashdash_paths: bool = True  # after `--` come paths (else more operands, as branch)


@dataclass
class Parsed:
    """Arguments split into options (canonical name, value) and operands."""

    options: list[tuple[Option, str | None]] = field(default_factory=list)
    positionals: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)  # after `--`

    def has(self, *names: str) -> bool:
        return any(option.name in names for option, _ in self.options)

    def values(self, *names: str) -> list[str]:
        return [v for o, v in self.options if o.name in names and v is not None]


GLOBAL_OPTIONS = frozenset(
    {"--git-dir", "--work-tree", "--exec-path", "--config-env", "--namespace",
     "--super-prefix", "--list-cmds", "--bare", "--literal-pathspecs", "--glob-pathspecs",
     "--noglob-pathspecs", "--icase-pathspecs", "--no-replace-objects", "-c", "-C"}
)  # fmt: skip


def refuse(message: str, **details: object) -> ToolError:
    return ToolError(ErrorKind.ARGUMENT_NOT_ALLOWED, message, **details)


def not_allowed(subcommand: str, spelled: str) -> ToolError:
    if spelled in GLOBAL_OPTIONS:
        return refuse(
            f"{spelled} is a global git option and is not allowed; the daemon runs git at "
            "the project root with its own config.",
            option=spelled,
        )
    return refuse(
        f"git {subcommand} {spelled} is not allowed: codeward accepts only the exact "
        "options it knows (no abbreviations); spell the option out in full, or leave it out.",
        option=spelled,
    )


def parse_args(subcommand: str, args: Sequence[str], spec: Spec) -> Parsed:
    """Split `args` as git would, refusing any option not in `spec` (naming it)."""
    parsed = Parsed()
    i, dashdash, end_of_options = 0, False, False
    while i < len(args):
        arg = args[i]
        i += 1
        if dashdash:
            (parsed.paths if spec.dashdash_paths else parsed.positionals).append(arg)
        elif arg == "--":
            dashdash = True
        elif end_of_options or not arg.startswith("-") or arg == "-":
            parsed.positionals.append(arg)
        elif arg == "--end-of-options":
            end_of_options = True
        elif arg.startswith("--"):
            i = _parse_long(subcommand, arg, args, i, spec, parsed)
        else:
            i = _parse_short(subcommand, arg, args, i, spec, parsed)
    return parsed


def _parse_long(
    subcommand: str, arg: str, args: Sequence[str], i: int, spec: Spec, parsed: Parsed
) -> int:
    spelled, eq, value = arg.partition("=")
    option = spec.options.get(spelled)
    if option is None:
        raise not_allowed(subcommand, spelled)
    if option.arity is Arity.NONE and eq:
        raise refuse(f"git {subcommand} {spelled} takes no value; remove `={value}`.")
    if option.arity is Arity.ATTACHED and not eq:
        raise refuse(f"git {subcommand} {spelled} needs its value attached: {spelled}=VALUE.")
    if option.arity is Arity.REQUIRED and not eq and i < len(args):
        value, eq = args[i], "="
        i += 1
    parsed.options.append((option, value if eq else None))
    return i


def _parse_short(
    subcommand: str, arg: str, args: Sequence[str], i: int, spec: Spec, parsed: Parsed
) -> int:
    letters = arg[1:]
    if letters.isdigit() and spec.number is not None:  # `-5`: a count
        parsed.options.append((Option(spec.number, Arity.REQUIRED), letters))
        return i
    for k, letter in enumerate(letters):
        option = spec.options.get(f"-{letter}")
        if option is None:
            raise not_allowed(subcommand, f"-{letter}")
        rest = letters[k + 1 :]
        if option.arity is Arity.NONE:
            parsed.options.append((option, None))
            if rest and not spec.clusters:
                raise refuse(
                    f"git {subcommand} does not group short options as in {arg!r}; "
                    "give each one as its own argument."
                )
            continue
        if option.arity is Arity.REQUIRED and not rest and i < len(args):
            rest = args[i]
            i += 1
        elif option.arity is Arity.ATTACHED and not rest:
            raise refuse(f"git {subcommand} -{letter} needs its value attached: -{letter}VALUE.")
        parsed.options.append((option, rest or None))
        break
    return i
