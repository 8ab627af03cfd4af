"""Configuration: the user's `config.toml`, and a project's narrowing `.codeward.toml`.

Read with tomllib, validated with msgspec; an error names the bad key.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta, Struct, field

from codeward.daemon.files import read_file
from codeward.protocol.errors import ToolError

Approval = Literal["allow", "confirm", "deny"]
EditApproval = Literal["allow", "confirm"]
Untrusted = Literal["default", "off", "run"]
# When its answers can be trusted (codeward.daemon.lsp.readiness says what each means).
ReadyWhen = Literal["idle", "quiescent", "project", "indexed", "service_ready", "open_files"]
_STRICTNESS: dict[str, int] = {"allow": 0, "confirm": 1, "deny": 2}
# Every time and count is validated when a config file is read: a negative or zero time,
# or a count below one, is an error naming its key (a struct built in code is not checked).
Seconds = Annotated[float, Meta(gt=0)]
GraceSeconds = Annotated[float, Meta(ge=0)]  # may be zero: no grace
Count = Annotated[int, Meta(ge=1)]
Amount = Annotated[int, Meta(ge=0)]  # may be zero: none


PROJECT_CONFIG_BYTES = 1024 * 1024
PROJECT_CONFIG = ".codeward.toml"  # a project's narrowing of the config, in its root


class ConfigError(Exception):
    """A config file that cannot be used; the message names the file and the key."""


class DaemonConfig(Struct, forbid_unknown_fields=True, kw_only=True):
    idle_timeout: Seconds = 600.0
    max_message_bytes: Count = 16 * 1024 * 1024
    max_header_bytes: Count = 8 * 1024
    max_connections: Count = 1024
    # a connection that sends no complete message within this many seconds is closed
    first_message_timeout: Seconds = 30.0
    # backpressure: a client's requests are not read while more than this many bytes of its
    # replies wait to be written, or while this many of its requests run
    max_queued_reply_bytes: Count = 4 * 1024 * 1024
    max_requests_in_flight: Count = 128
    max_batch_reply_bytes: Count = 4 * 1024 * 1024  # replies beyond it: output_too_large
    stop_timeout: GraceSeconds = 30.0  # on SIGTERM, how long writes in flight may take to finish
    log_level: str = "info"
    # Daemon-wide caps: beyond them the least recently used idle session's servers stop
    # (they start again on that session's next request).
    max_servers: Count = 32
    max_sessions: Count = 16


class PolicyConfig(Struct, forbid_unknown_fields=True, kw_only=True):
    git_write: Approval = "confirm"
    git_destructive: Approval = "confirm"
    edits: EditApproval = "allow"  # file writes of the edit tools
    confirm_timeout: Seconds = 60.0

    def narrowed(self, other: PolicyConfig | ProjectPolicy) -> PolicyConfig:
        """The stricter of this policy and `other`'s approvals, key by key (a project or a
        client may only narrow); the confirm timeout stays the user's."""
        return PolicyConfig(
            git_write=_stricter(self.git_write, other.git_write or self.git_write),
            git_destructive=_stricter(
                self.git_destructive, other.git_destructive or self.git_destructive
            ),
            edits=_stricter(self.edits, other.edits or self.edits),  # type: ignore[arg-type]
            confirm_timeout=self.confirm_timeout,
        )


def _stricter(a: Approval, b: Approval) -> Approval:
    return a if _STRICTNESS[a] >= _STRICTNESS[b] else b


class LuaConfig(Struct, forbid_unknown_fields=True, kw_only=True):
    cpu_seconds: Seconds = 1.0
    wall_seconds: Seconds = 60.0
    memory_mb: Count = 64
    host_calls: Amount = 1000
    result_bytes: Count = 1024 * 1024
    runtimes: Count = 16  # evals of one session that run at once, each in its own runtime


class GitConfig(Struct, forbid_unknown_fields=True, kw_only=True):
    timeout: Seconds = 60.0
    output_bytes: Count = 1024 * 1024


class ServerConfig(Struct, forbid_unknown_fields=True, kw_only=True):
    command: list[str]
    settings: dict[str, Any] = field(default_factory=dict)
    init_options: dict[str, Any] | None = None
    env: dict[str, str] = field(default_factory=dict)
    languages: list[str] = field(default_factory=list)
    install_hint: str = ""
    # Restarted between requests once its process group uses more (None: lsp.max_rss_mb).
    max_rss_mb: Count | None = None
    # Methods it runs one at a time, an earlier one cancelled by the next, and that must never
    # be cancelled with `$/cancelRequest` (a cancelled one can break the server for good).
    exclusive_methods: list[str] = field(default_factory=list)
    # Text of an error answer that means its state is broken: it is restarted, the request
    # retried once.
    broken_when: list[str] = field(default_factory=list)
    # Methods it registers dynamically once it has read its settings: `offers` waits for
    # them up to `lsp.ready_timeout` instead of a short grace.
    registers: list[str] = field(default_factory=list)
    # In an untrusted root: "default" (codeward's restricted configuration of a server it
    # knows, else not started), "off" (never started there), "run" (started as configured)
    untrusted: Untrusted = "default"
    # When its answers can be trusted: "idle" (no work-done progress), "quiescent"
    # (rust-analyzer's server status), "project" (tsserver: a file open and loaded),
    # "indexed" (its indexing progress ended), "service_ready" (jdtls' language/status),
    # "open_files" (clangd: knows only the open files)
    ready_when: ReadyWhen = "idle"
    # Where a file's diagnostics come from: "server" (its pull, else its pushes), or
    # "tsserver" (asked of tsserver through typescript-language-server: its pushes come in
    # stages, the first often without the type errors)
    diagnostics_from: Literal["server", "tsserver"] = "server"
    # The title (its start) of the work-done progress the server reports around its
    # diagnosis of each change, if it has one (gopls: "diagnosing", with its
    # `verboseWorkDoneProgress`). Once it was seen, a file's pushed diagnostics are final
    # when every progress begun for the changes sent before has ended: what the server
    # published last then stands, a new version of that file or not.
    diagnosis_progress: str = ""
    # Whether one process serves every root of a repository, each a workspace folder of it
    # (measured per server: it answers each folder's files as a server of its own would).
    # None: as the built-in entry of the same name says (else False).
    folders: bool | None = None
    # Where its quick fixes are asked: "range" (the lines asked about, with their
    # diagnostics) or also "diagnostic" (one request more at each diagnostic's own range:
    # svelte-language-server answers a diagnostic's fixes only for a range starting there)
    code_actions_at: Literal["range", "diagnostic"] = "range"
    # Seconds it must hear nothing before it takes in files created or deleted (basedpyright:
    # 0.3): a question about the whole project (references, ...) waits for that after such
    # a change (lsp.new_files). 0: it takes them in at once.
    quiet_after_new_files: GraceSeconds = 0.0
    # Whether a folder's diagnostics pull its workspace diagnostics when it offers them
    # (else its files are asked in batches). None: as the built-in entry of the same name
    # says (else True). basedpyright: False (each pull marks every file dirty, so its
    # analysis starts over, and a cancelled one runs on to the end of the project).
    workspace_pull: bool | None = None
    # Whether it runs on node with its V8 heap limited to `HEAP_SHARE` of its memory cap
    # (`--max-old-space-size` added to its NODE_OPTIONS): a server that empties its caches
    # as its heap fills (basedpyright: its type cache at 90% of the heap) then stays below
    # the share of its cap where codeward stops asking it (80%) and goes on, instead of
    # growing until it is restarted at the cap. None: as the built-in entry of the same
    # name says (else False).
    node_heap: bool | None = None


class LanguageConfig(Struct, forbid_unknown_fields=True, kw_only=True):
    patterns: list[str]
    servers: list[str]
    language_id: str = ""


class LspConfig(Struct, forbid_unknown_fields=True, kw_only=True):
    request_timeout: Seconds = 30.0
    # by method, over DEFAULT_METHOD_TIMEOUTS, else request_timeout (`timeout_for`)
    method_timeouts: dict[str, Seconds] = field(default_factory=dict)
    initialize_timeout: Seconds = 60.0
    settle_timeout: GraceSeconds = 10.0
    ready_timeout: GraceSeconds = 20.0
    max_open_documents: Count = 200
    folder_diagnostics_files: Amount = 100  # files opened at once per server (one batch)
    # a folder's diagnostics start new batches of files while the call is within this
    folder_diagnostics_seconds: Seconds = 20.0
    shutdown_timeout: GraceSeconds = 3.0
    max_rss_mb: Count = 4096  # per server, unless its own max_rss_mb says otherwise
    cancel_grace: Seconds = 30.0  # a request given up on must be answered within this, or restart
    check_interval: Seconds = 2.0  # seconds between checks of a server's memory and answers
    # a server no request used for this many seconds is stopped (it starts again on its
    # next need; a server shared by several roots counts as used by any of them); 0: never
    idle_stop: GraceSeconds = 600.0
    crash_limit: Count = 5  # crashes within 5 minutes before a server is marked failed
    max_file_bytes: Count = 8 * 1024 * 1024  # larger files are refused, never sent to servers

    def timeout_for(self, method: str) -> float:
        """A request's timeout: the user's for its method, else the built-in one, else
        `request_timeout` (a user's table adds to the built-in ones, never drops them)."""
        given = self.method_timeouts.get(method)
        if given is not None:
            return given
        return DEFAULT_METHOD_TIMEOUTS.get(method, self.request_timeout)


# Workspace symbols: a server loading a large project answers its first once loaded
# (basedpyright on sympy under load: over a minute); given up on at 30 s, it was restarted
# for leaving the cancelled request unanswered, and began loading again.
DEFAULT_METHOD_TIMEOUTS: dict[str, float] = {"workspace/symbol": 120.0}


class Config(Struct, forbid_unknown_fields=True, kw_only=True):
    daemon: DaemonConfig = field(default_factory=DaemonConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    lua: LuaConfig = field(default_factory=LuaConfig)
    git: GitConfig = field(default_factory=GitConfig)
    lsp: LspConfig = field(default_factory=LspConfig)
    servers: dict[str, ServerConfig] = field(default_factory=dict)
    languages: dict[str, LanguageConfig] = field(default_factory=dict)


class ProjectPolicy(Struct, forbid_unknown_fields=True, kw_only=True):
    """A project's approvals: only ever stricter than the user's. No limit (the confirm
    timeout is the user's alone)."""

    git_write: Approval | None = None
    git_destructive: Approval | None = None
    edits: EditApproval | None = None


class ProjectConfig(Struct, forbid_unknown_fields=True, kw_only=True):
    """`.codeward.toml`: it may only narrow: stricter approvals, and for a language a choice
    among the servers the user's config gives it (at least one). It can never name a
    command, set a limit or turn a language's servers off (which would reach a fallback
    program such as prettier)."""

    policy: ProjectPolicy | None = None
    # language -> the servers chosen among the configured ones
    servers: dict[str, Annotated[list[str], Meta(min_length=1)]] = field(default_factory=dict)


# What only the user's config may set: limits, routing and programs.
_USER_ONLY = ("daemon", "lua", "git", "lsp", "languages")
USER_CONFIG = "$XDG_CONFIG_HOME/codeward/config.toml"


def config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "codeward" / "config.toml"


def _decode(data: dict[str, Any], type_: type, source: str) -> Any:
    try:
        return msgspec.convert(data, type=type_)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{source}: {exc}") from None


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def load_config(path: Path | None = None) -> Config:
    """The user's config (defaults where the file is missing)."""
    path = path or config_path()
    if not path.exists():
        return Config()
    return _decode(_read_toml(path), Config, str(path))


def load_project_config(root: Path) -> ProjectConfig:
    """The project's `.codeward.toml`, read like every project file (`read_file`): a FIFO,
    a folder or a link out of the project there is an error, never read or waited on."""
    path = root / PROJECT_CONFIG
    if not os.path.lexists(path):
        return ProjectConfig()
    try:
        data, _ = read_file(path, root, PROJECT_CONFIG_BYTES)
    except ToolError as exc:
        raise ConfigError(exc.message) from None
    try:
        parsed = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f".codeward.toml: not valid TOML: {exc}") from None
    _refuse_user_settings(parsed)
    return _decode(parsed, ProjectConfig, ".codeward.toml")


def _refuse_user_settings(parsed: dict[str, Any]) -> None:
    """A clear error for what a project may not set (the rest is msgspec's to check)."""
    for section in _USER_ONLY:
        if section in parsed:
            raise ConfigError(
                f".codeward.toml: [{section}] is the user's to set ({USER_CONFIG}); a "
                "project may only choose stricter approvals ([policy]) and among the "
                "configured servers ([servers]): remove it."
            )
    policy = parsed.get("policy")
    if isinstance(policy, dict) and "confirm_timeout" in policy:
        raise ConfigError(
            f".codeward.toml: policy.confirm_timeout is a limit, the user's to set "
            f"({USER_CONFIG}); a project may only make git_write and git_destructive "
            "stricter: remove it."
        )
    servers = parsed.get("servers")
    for language, chosen in servers.items() if isinstance(servers, dict) else ():
        if isinstance(chosen, dict):
            raise ConfigError(
                f".codeward.toml: [servers.{language}] configures a server; a project "
                f"may only choose among configured ones (`{language} = [...]` under "
                "[servers]) and never name a command."
            )
        if chosen == []:
            raise ConfigError(
                f".codeward.toml: servers.{language} is empty; a project may choose among "
                "a language's configured servers but never turn them all off."
            )
