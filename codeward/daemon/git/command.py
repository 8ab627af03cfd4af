"""`run_git`: policy, repository checks, approval, the run itself, parsing, changed files."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import trio

from codeward.daemon.approvals import CONFIRM_WAYS
from codeward.daemon.config import GitConfig, PolicyConfig
from codeward.daemon.git import changes, config_scan, log_format, parse, remotes, status
from codeward.daemon.git.config_scan import ConfigEntry
from codeward.daemon.git.messages import failure_message
from codeward.daemon.git.policy import Decision, Tier, classify
from codeward.daemon.git.repository import Repository, inspect, probe
from codeward.daemon.git.runner import Completed, find_git, git_argv, git_env, run_process
from codeward.daemon.paths import is_inside, scrub
from codeward.protocol.errors import ErrorKind, ToolError

Approve = Callable[[str, list[str]], Awaitable[bool | None]]
FilesChanged = Callable[[list[Path]], None]
Exclusive = Callable[[Callable[[], Awaitable[None]]], Awaitable[None]]
Parser = Callable[[bytes], Any]
Render = Callable[[bytes], bytes | None]  # the user's output from the parse run's, if it can


@dataclass(frozen=True)
class ParseRun:
    args: list[str]
    parser: Parser
    # the output is the same bytes in any locale: git runs in C, which it sets up faster
    any_locale: bool = False


async def run_git(
    root: Path,
    subcommand: str,
    args: list[str],
    *,
    allow_destructive: bool,
    policy: PolicyConfig,
    limits: GitConfig,
    approve: Approve,
    on_files_changed: FilesChanged,
    exclusive: Exclusive | None = None,
) -> dict[str, Any]:
    """Run `git subcommand args` at `root` under the session's policy; the tool's result.

    A write (once approved) runs through `exclusive`, which runs it when no other write to
    the root's files runs (the session's RootWriter)."""
    if not isinstance(args, list | tuple):
        raise ToolError(ErrorKind.INVALID_ARGUMENTS, "Give `args` as a list of strings.")
    decision = classify(root, subcommand, list(args))
    env = git_env(read_only=decision.tier is Tier.READ)
    git = find_git(env)
    # a log printing no diff enters no repository nested in the work tree: their part of
    # the inspection (the index's gitlinks) is not checked for it
    plain_log = decision.subcommand == "log" and log_format.plain(decision.args)
    repo = await inspect(git, root, nested=not plain_log)
    urls = remotes.check(root, decision.subcommand, decision.args, repo.entries, repo.git_dir,
                         repo.common_dir)  # fmt: skip
    tier, reason = _effective_tier(decision, repo)
    if urls:  # the approval names what the command contacts
        reason = f"{reason}: {remotes.describe(urls)}"
    argv = ["git", decision.subcommand, *decision.args]
    await _authorize(decision, tier, reason, argv, allow_destructive, policy, approve)

    ls_files = ["ls-files", "-z", "--cached", "--others", "--exclude-standard"]
    plan = _checked_plan(root, decision, _parse_plan(decision))
    reuse = plan is not None and len(plan) == 1 and sorted(plan[0].args) == sorted(decision.args)
    # status, diff and log: git runs once, for the parser; the output is rendered from it
    render = None if plan is None or reuse else _renderer(decision, repo)
    one_run = render is not None
    results: dict[int, Completed] = {}

    async def one(index: int, cmd_args: Sequence[str]) -> None:
        run_env = env
        if index > 0 and plan is not None and plan[index - 1].any_locale:
            run_env = {**env, "LC_ALL": "C", "LANG": "C"}
        results[index] = await run_process(
            git_argv(git, root, decision.subcommand, cmd_args),
            cwd=None, env=run_env, timeout=limits.timeout, output_bytes=limits.output_bytes,
            # the one run's output is rendered only whole (past the cap, the command runs)
            stop_at_cap=one_run and index == 1,
        )  # fmt: skip

    async def run_all() -> None:
        before: changes.Snapshot | None = None
        if decision.changes_worktree:
            listed = await probe(git, root, ls_files)
            before = changes.snapshot(root, changes.parse_ls_files(listed.stdout))
        try:
            # a write is never left half-done by a cancel or a disconnect; its timeout holds
            runs = [] if one_run else [(0, decision.args)]
            if plan is not None and not reuse:
                runs += [(index, run.args) for index, run in enumerate(plan, start=1)]
            shield = trio.CancelScope(shield=True) if decision.tier is not Tier.READ else None
            with shield or contextlib.nullcontext():
                if len(runs) == 1:  # the common case: no task to start
                    await one(*runs[0])
                else:
                    async with trio.open_nursery() as nursery:
                        for index, cmd_args in runs:
                            nursery.start_soon(one, index, cmd_args)
        finally:
            if before is not None:
                with trio.CancelScope(shield=True):
                    listed = await probe(git, root, ls_files)
                    after = changes.snapshot(root, changes.parse_ls_files(listed.stdout))
                    changed = changes.changed(root, before, after)
                    if changed:
                        on_files_changed(changed)

    if decision.tier is Tier.READ or exclusive is None:
        await run_all()
    else:  # writes to one root run one at a time, in the task that writes its files
        await exclusive(run_all)

    if render is not None:
        run = results[1]
        whole = run.exit_code == 0 and not run.timed_out and not run.truncated
        rendered = render(run.stdout) if whole else None
        if run.timed_out:  # the command as given would take as long: not run after it
            results[0] = run
        elif rendered is None:  # something only git itself words: ask it
            await one(0, decision.args)
        else:
            results[0] = Completed(run.exit_code, rendered, run.stderr, False, False)
    done = results[0]
    if done.timed_out:
        raise _timeout_error(decision, repo, root, limits.timeout)
    output = done.stdout.decode("utf-8", "replace")
    stderr = done.stderr.decode("utf-8", "replace")
    if done.exit_code != 0:
        raise ToolError(
            ErrorKind.GIT_FAILED,
            failure_message(decision.subcommand, done.exit_code, stderr, root),
            exit_code=done.exit_code, stderr=scrub(stderr, root), output=scrub(output, root),
            truncated=done.truncated,
        )  # fmt: skip
    parsed = None
    if plan is not None:
        outputs = [done] * len(plan) if reuse else [results[i] for i in range(1, len(plan) + 1)]
        parsed = _combine(decision.subcommand, plan, outputs)
    if decision.subcommand == "remote":  # remotes' URLs: a local one is a path outside
        output = remotes.scrub_urls(output, root)
        for entry in (parsed or {}).get("remotes") or []:
            for key in ("fetch_url", "push_url"):
                if entry[key] is not None:
                    entry[key] = remotes.scrub_urls(entry[key], root)
    return {
        "exit_code": done.exit_code,
        "output": output,
        "stderr": scrub(stderr, root),  # git's messages: `From /other/repo`, `remote: ...`
        "truncated": done.truncated,
        "parsed": parsed,
    }


# --- approval ---------------------------------------------------------------------------

_RANK = [Tier.READ, Tier.WRITE, Tier.DESTRUCTIVE]


def _effective_tier(decision: Decision, repo: Repository) -> tuple[Tier, str]:
    if decision.subcommand == "fetch" and decision.tier is not Tier.DESTRUCTIVE:
        found = config_scan.implicit_local_fetch(repo.entries)
        if found is not None:
            key, forced = found
            tier = Tier.DESTRUCTIVE if forced else Tier.WRITE
            tier = max(tier, decision.tier, key=_RANK.index)
            return tier, f"the repository's {key} makes fetch update local branches or tags"
    if decision.subcommand == "push" and decision.tier is Tier.WRITE:
        key = config_scan.implicit_force_push(repo.entries)
        if key is not None:
            return Tier.DESTRUCTIVE, f"the repository's {key} makes this push a force push"
    return decision.tier, decision.reason


async def _authorize(
    decision: Decision,
    tier: Tier,
    reason: str,
    argv: list[str],
    allow_destructive: bool,
    policy: PolicyConfig,
    approve: Approve,
) -> None:
    """Return when the command may run; raise the policy's refusal otherwise."""
    if tier is Tier.READ:
        return
    shown = f"git {decision.subcommand}"
    if tier is Tier.DESTRUCTIVE:
        if not allow_destructive:
            raise ToolError(
                ErrorKind.BLOCKED_DESTRUCTIVE,
                f"{shown} is destructive here ({reason}); if that is intended, call again "
                "with allow_destructive: true, which still asks for approval.",
                tier=tier.value,
            )
        setting, key = policy.git_destructive, "git_destructive"
    else:
        setting, key = policy.git_write, "git_write"
    if setting == "deny":
        kind = (
            ErrorKind.BLOCKED_DESTRUCTIVE
            if tier is Tier.DESTRUCTIVE
            else (ErrorKind.SUBCOMMAND_NOT_ALLOWED)
        )
        raise ToolError(
            kind,
            f'The session policy denies git {tier.value} commands ({key} = "deny"); '
            f"ask the user to run {shown} themselves.",
            tier=tier.value,
        )
    if setting == "allow":
        return
    answer = await approve(replace(decision, tier=tier, reason=reason).summary, argv)
    if answer is None:
        raise ToolError(
            ErrorKind.CONFIRMATION_REQUIRED,
            f"{shown} needs the user's approval and this client cannot confirm; "
            f'{CONFIRM_WAYS}, or set policy.{key} = "allow" in the codeward config.',
            tier=tier.value,
        )
    if not answer:
        raise ToolError(
            ErrorKind.CONFIRMATION_DENIED,
            f"The user declined {shown}; nothing was run, so ask before trying otherwise.",
            tier=tier.value,
        )


# --- parsing ----------------------------------------------------------------------------

_DROP_EXACT = frozenset(
    {
        "-p", "-u", "--patch", "-s", "--no-patch", "--raw", "--stat", "--numstat",
        "--shortstat", "--summary", "--name-only", "--name-status", "--compact-summary",
        "--patch-with-stat", "--patch-with-raw", "--oneline", "--graph", "--no-color",
        "--full-index", "--binary", "--no-prefix", "--default-prefix", "--exit-code",
        "--quiet", "--check", "--abbrev-commit", "--no-abbrev-commit", "--no-decorate",
        "--decorate", "--cc", "--combined-all-paths", "--log-size", "--no-notes",
        "--show-signature", "--relative-date", "--parents", "--children", "--left-right",
        "--show-linear-break", "-z", "--no-abbrev", "--source", "--dirstat", "--cumulative",
        "--no-stat", "-m", "-c", "-t", "--no-walk",
    }
)  # fmt: skip
_DROP_PREFIXES = (
    "--stat=", "--stat-", "--dirstat=", "--color", "--word-diff", "--pretty", "--format=",
    "--decorate=", "--abbrev", "--src-prefix", "--dst-prefix", "--line-prefix",
    "--output-indicator-", "--notes", "--date=", "--show-notes", "--diff-merges", "-L",
)  # fmt: skip
_STATUS_KEEP = ("-u", "--untracked-files", "--ignored", "--ignore-submodules", "--no-renames",
                "--find-renames", "-M")  # fmt: skip
_DIFF_FORMAT = ["--no-color", "--raw", "--numstat", "-p", "-z", "--src-prefix=a/",
                "--dst-prefix=b/"]  # fmt: skip


def _filters(args: Sequence[str]) -> list[str]:
    """The user's arguments without those that only change how output looks."""
    kept: list[str] = []
    skip_next = False
    for i, arg in enumerate(args):
        if skip_next:
            skip_next = False
            continue
        if "--" in args[:i]:
            kept.append(arg)
        elif arg == "-L":
            skip_next = True
        elif arg not in _DROP_EXACT and not arg.startswith(_DROP_PREFIXES):
            kept.append(arg)
    return kept


def _status_filters(args: Sequence[str]) -> list[str]:
    kept = []
    for i, arg in enumerate(args):
        after = "--" in args[:i] or arg == "--"
        if after or not arg.startswith("-") or arg.startswith(_STATUS_KEEP):
            kept.append(arg)
    return kept


def _parse_plan(decision: Decision) -> list[ParseRun] | None:
    """The runs whose output `parsed` is made from, or None when the command has no parser."""
    sub, args = decision.subcommand, decision.args
    if decision.tier is not Tier.READ:
        return None
    if sub == "status":
        base = ["--porcelain=v2", "-z", "--branch"]
        return [ParseRun(base + _status_filters(args), parse.parse_status, any_locale=True)]
    if sub == "diff":
        return [ParseRun(_DIFF_FORMAT + _filters(args), parse.parse_diff)]
    if sub == "log" and log_format.plain(args):  # one run can print the user's log too
        return [ParseRun([*log_format.RUN_OPTIONS, *args], log_format.parse_log)]
    if sub == "log":
        return [ParseRun(["-z", f"--format={parse.LOG_FORMAT}", *_filters(args)],
                         parse.parse_log)]  # fmt: skip
    if sub == "show":
        kept = _filters(args)
        return [
            ParseRun(["-s", "-z", f"--format={parse.LOG_FORMAT}", *kept], parse.parse_log),
            ParseRun(["--format=", "--diff-merges=first-parent", *_DIFF_FORMAT, *kept],
                     parse.parse_diff),
        ]  # fmt: skip
    if sub == "branch":
        fmt = f"--format={parse.BRANCH_FORMAT}"
        return [ParseRun(["--list", "--all", "--no-color", fmt], parse.parse_branches)]
    if sub == "tag":
        return [ParseRun(["--list", f"--format={parse.TAG_FORMAT}"], parse.parse_tags)]
    if sub == "remote":
        return [ParseRun(["-v"], parse.parse_remotes)]
    if sub == "stash" and args[:1] == ("list",):
        fmt = f"--format={parse.STASH_FORMAT}"
        return [ParseRun(["list", "-z", fmt, *_filters(args[1:])], parse.parse_stash_list)]
    return None


def _checked_plan(
    root: Path, decision: Decision, plan: list[ParseRun] | None
) -> list[ParseRun] | None:
    """The parse runs, if each passes the policy as a read (dropping a display option can
    leave its value behind as an option of its own: `--src-prefix --output=x`). Without
    arguments of the user's, the parse runs are ours alone: their verdict is remembered."""
    for run in plan or []:
        key = (decision.subcommand, tuple(run.args))
        read = _OUR_PLANS.get(key) if not decision.args else None
        if read is None:
            try:
                read = classify(root, decision.subcommand, run.args).tier is Tier.READ
            except ToolError:
                read = False
            if not decision.args:
                _OUR_PLANS[key] = read
        if not read:
            return None
    return plan


_OUR_PLANS: dict[tuple[str, tuple[str, ...]], bool] = {}  # parse runs without user arguments


def _combine(subcommand: str, plan: list[ParseRun], outputs: list[Completed]) -> Any:
    """`parsed` from the parse runs; a run that failed or timed out yields None."""
    values = [
        run.parser(out.stdout) if out.exit_code == 0 and not out.timed_out else None
        for run, out in zip(plan, outputs, strict=True)
    ]
    if subcommand == "log":
        return None if values[0] is None else {"commits": values[0]}
    if subcommand == "show":
        commits, files = values
        return {"commits": commits, "files": files if commits and len(commits) == 1 else None}
    if subcommand == "diff":
        return None if values[0] is None else {"files": values[0]}
    if subcommand == "stash":
        return None if values[0] is None else {"stashes": values[0]}
    if subcommand == "remote":
        return None if values[0] is None else {"remotes": values[0]}
    if subcommand == "tag":
        return None if values[0] is None else {"tags": values[0]}
    return values[0]


def _renderer(decision: Decision, repo: Repository) -> Render | None:
    """What makes, exactly, what the user's command prints from the parse run's output (None
    when only git itself can say it): decided once, before git runs."""
    args = decision.args
    if decision.subcommand == "diff":  # the parse run's patch, when no option changes its look
        if _filters(args) != list(args) or repo.fact(_patch_configured):
            return None
        return parse.diff_patch
    if decision.subcommand == "log":  # the medium format, when nothing changes its look
        if not log_format.plain(args) or repo.fact(log_format.configured):
            return None
        return log_format.medium
    if decision.subcommand != "status":
        return None
    porcelain = status.porcelain_format(args, repo.fact(status.quote_path_configured))
    if porcelain is not None:
        branch, nul = porcelain
        return lambda data: status.porcelain(data, branch, nul)
    mode = status.untracked_mode(args)
    if mode is None or repo.gitlinks:  # submodules: their state is git's to word
        return None
    if not status.plain(repo.fact(status.format_configured), repo.git_dir, repo.git_dir_names):
        return None

    def long_format(data: bytes) -> bytes | None:
        text = status.long_format(data, mode)
        return None if text is None else text.encode("utf-8", "surrogateescape")

    return long_format


def _patch_configured(entries: Sequence[ConfigEntry]) -> bool:
    """Whether config among `entries` makes `git diff`'s patch differ from the parse run's."""
    for entry in entries:
        key, value = entry.key.lower(), (entry.value or "true").lower()
        if key in ("diff.noprefix", "diff.mnemonicprefix"):
            if value not in ("false", "no", "off", "0"):
                return True
        elif key in ("color.ui", "color.diff") and "always" in value:
            return True
    return False


# --- failures ---------------------------------------------------------------------------


def _timeout_error(decision: Decision, repo: Repository, root: Path, timeout: float) -> ToolError:
    lock = repo.git_dir / "index.lock"
    if lock.exists():
        shown = lock.relative_to(root).as_posix() if is_inside(lock, root) else "index.lock"
        return ToolError(
            ErrorKind.TIMEOUT,
            f"git {decision.subcommand} timed out after {timeout:g} s and left {shown} behind; "
            "make sure no git process is still running, then remove that lock yourself.",
            index_lock=shown,
        )
    return ToolError(
        ErrorKind.TIMEOUT,
        f"git {decision.subcommand} timed out after {timeout:g} s and was stopped; "
        "narrow the command or raise git.timeout in the config.",
    )
