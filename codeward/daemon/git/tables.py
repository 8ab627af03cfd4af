"""The options codeward accepts for each subcommand, with git's own arity (see grammar.py).

Each table is checked against the real git by tests/test_git_grammar.py: parse-options
commands by their `-h` listing, log/diff/show by driving git's revision parser. Options
that run programs, write files, read files outside the root, or turn a command
interactive are left out on purpose (`--output`, `--ext-diff`, `--textconv`,
`--upload-pack`, `--receive-pack`, `--exec`, `--no-index`, `--contents`, `-O` of grep,
`--refmap`, `--recurse-submodules`, `--interactive`, `--patch` where it asks, ...).
"""

from __future__ import annotations

from codeward.daemon.git.grammar import Option, Spec, options

# Diff output options (diff, log, show, stash show), as git's diff.c parses them.
DIFF = options(
    "p u patch", "s no-patch", "U unified =?", "raw", "patch-with-raw", "patch-with-stat",
    "numstat", "shortstat", "X dirstat =?", "cumulative", "dirstat-by-file =?", "summary",
    "name-only", "name-status", "stat =?", "stat-width =", "stat-name-width =",
    "stat-graph-width =", "stat-count =", "compact-summary", "z", "full-index", "binary",
    "abbrev =?", "no-abbrev", "B break-rewrites =?", "M find-renames =?",
    "D irreversible-delete", "C find-copies =?", "find-copies-harder", "no-renames",
    "rename-empty", "no-rename-empty", "l =", "diff-algorithm =", "minimal", "patience",
    "histogram", "anchored =", "color =?", "no-color", "color-moved =?", "no-color-moved",
    "color-moved-ws =", "no-color-moved-ws", "word-diff =?", "word-diff-regex =",
    "color-words =?", "no-prefix", "src-prefix =", "dst-prefix =", "line-prefix =",
    "relative =?", "no-relative", "a text", "ignore-cr-at-eol", "ignore-space-at-eol",
    "b ignore-space-change", "w ignore-all-space", "ignore-blank-lines",
    "I ignore-matching-lines =", "inter-hunk-context =", "W function-context", "exit-code",
    "quiet", "no-ext-diff", "no-textconv", "ignore-submodules =?", "submodule =?",
    "S =", "G =", "pickaxe-all", "pickaxe-regex", "find-object =", "diff-filter =",
    "O =file", "rotate-to =", "skip-to =", "R", "check", "ws-error-highlight =",
    "ita-invisible-in-index", "ita-visible-in-index",
)  # fmt: skip

# Commit limiting, ordering and formatting (log, show, shortlog), as revision.c parses them.
REVISION = options(
    "n max-count =", "skip =", "since =", "after =", "until =", "before =", "author =",
    "committer =", "grep =", "all-match", "invert-grep", "i regexp-ignore-case",
    "basic-regexp", "E extended-regexp", "F fixed-strings", "P perl-regexp", "remove-empty",
    "merges", "no-merges", "min-parents =!", "max-parents =!", "first-parent", "not", "all",
    "branches =?", "tags =?", "remotes =?", "glob =", "exclude =", "reflog",
    "single-worktree", "cherry-mark", "cherry-pick", "left-only",
    "right-only", "cherry", "g walk-reflogs", "boundary", "simplify-by-decoration",
    "full-history", "dense", "sparse", "simplify-merges", "ancestry-path =?", "show-pulls",
    "date-order", "author-date-order", "topo-order", "reverse", "no-walk =?", "do-walk",
    "pretty =?", "format =!", "abbrev-commit", "no-abbrev-commit", "oneline", "encoding =",
    "expand-tabs =?", "no-expand-tabs", "notes =?", "no-notes", "show-signature",
    "relative-date", "date =", "parents", "children", "left-right", "graph",
    "show-linear-break =?", "c", "cc", "m", "t", "diff-merges =", "no-diff-merges",
    "combined-all-paths", "decorate =?", "no-decorate", "decorate-refs =",
    "decorate-refs-exclude =", "source", "use-mailmap", "no-use-mailmap", "log-size",
    "L =", "follow", "full-diff",
)  # fmt: skip

_LOG = Spec({**DIFF, **REVISION}, clusters=False, number="max-count")
_PATHSPEC_FILE = options("pathspec-from-file =file", "pathspec-file-nul")
_STRATEGY = options("s strategy =strategy", "X strategy-option =")
_SIGN = options("S gpg-sign =?", "no-gpg-sign")
_SEQUENCER = options("continue", "abort", "quit", "skip", "cleanup =", "rerere-autoupdate",
                     "no-rerere-autoupdate")  # fmt: skip
_QUIET = options("q quiet", "v verbose")
_NETWORK = options("4 ipv4", "6 ipv6", "o server-option =", "progress", "no-progress")
_FETCHING = options(
    "all", "a append", "t tags", "no-tags", "p prune", "dry-run", "k keep", "depth =",
    "deepen =", "shallow-since =", "shallow-exclude =", "unshallow", "negotiation-tip =",
    "show-forced-updates", "no-show-forced-updates", "f force",
)  # fmt: skip
_REF_FILTERS = options("contains =", "no-contains =", "merged =", "no-merged =",
                       "points-at =", "sort =", "format =", "i ignore-case", "color =?",
                       "no-color", "column =?", "no-column")  # fmt: skip

# fmt: off
SPECS: dict[str, Spec] = {
    "status": Spec(options(
        "v verbose", "s short", "b branch", "show-stash", "ahead-behind", "no-ahead-behind",
        "porcelain =?", "long", "z null", "u untracked-files =?", "ignored =?",
        "ignore-submodules =?", "column =?", "no-column", "no-renames", "renames",
        "M find-renames =?",
    )),
    "diff": Spec({**DIFF, **options("cached", "staged", "merge-base", "1 base", "2 ours",
                                    "3 theirs", "0")}, clusters=False),
    "log": _LOG,
    "show": _LOG,
    "shortlog": Spec(
        {**{k: v for k, v in REVISION.items() if len(k) > 2 or k in ("-i", "-E", "-F", "-P")},
         **options("c committer", "n numbered", "s summary", "e email", "w =?", "group =")},
        number="max-count",
    ),
    "blame": Spec(options(
        "incremental", "b", "root", "show-stats", "progress", "no-progress", "score-debug",
        "f show-name", "n show-number", "p porcelain", "line-porcelain", "c", "t", "l", "s",
        "e show-email", "w", "ignore-rev =", "ignore-revs-file =file", "color-lines",
        "color-by-age", "minimal", "S =file", "C =?", "M =?", "L =", "abbrev =?",
    )),
    "grep": Spec(
        options(
            "cached", "untracked", "exclude-standard", "no-exclude-standard",
            "v invert-match", "i ignore-case", "w word-regexp", "a text", "I", "no-textconv",
            "r recursive", "no-recursive", "max-depth =", "E extended-regexp",
            "G basic-regexp", "F fixed-strings", "P perl-regexp", "n line-number", "column",
            "h", "H", "full-name", "l files-with-matches", "name-only",
            "L files-without-match", "z null", "o only-matching", "c count", "color =?",
            "no-color", "break", "heading", "C context =", "B before-context =",
            "A after-context =", "threads =", "p show-function", "W function-context",
            "f =file", "e =", "and", "or", "not", "q quiet", "all-match", "m max-count =",
        ),
        number="context",
    ),
    "ls-files": Spec(options(
        "z", "t", "v", "f", "c cached", "d deleted", "m modified", "o others", "i ignored",
        "s stage", "k killed", "directory", "no-empty-directory", "eol", "u unmerged",
        "resolve-undo", "x exclude =", "X exclude-from =file", "exclude-per-directory =",
        "exclude-standard", "full-name", "error-unmatch", "with-tree =", "abbrev =?",
        "debug", "deduplicate", "sparse", "format =",
    )),
    "rev-parse": Spec(options(
        "verify", "q quiet", "short =?", "abbrev-ref =?", "symbolic", "symbolic-full-name",
        "show-toplevel", "show-prefix", "show-cdup", "is-inside-work-tree",
        "is-inside-git-dir", "is-bare-repository", "is-shallow-repository", "all",
        "branches =?", "tags =?", "remotes =?", "glob =!", "exclude =!", "not", "revs-only",
        "no-revs", "flags", "no-flags", "default =", "sq", "sq-quote",
    )),
    "describe": Spec(options(
        "contains", "debug", "all", "tags", "long", "first-parent", "abbrev =?",
        "exact-match", "candidates =", "match =", "exclude =", "always", "dirty =?",
        "broken =?",
    )),
    "fetch": Spec(
        {**_QUIET, **_NETWORK, **_FETCHING,
         **options("m multiple", "atomic", "n", "P prune-tags", "write-fetch-head",
                   "no-write-fetch-head", "refetch", "no-recurse-submodules")},
        dashdash_paths=False,
    ),
    "pull": Spec(
        {**_QUIET, **_NETWORK, **_FETCHING, **_STRATEGY, **_SIGN,
         **options("r rebase =?", "no-rebase", "n", "stat", "no-stat", "log =?", "no-log",
                   "signoff =?", "no-signoff", "squash", "no-squash", "commit", "no-commit",
                   "edit", "no-edit", "cleanup =", "ff", "no-ff", "ff-only", "verify",
                   "no-verify", "autostash", "no-autostash", "allow-unrelated-histories",
                   "no-recurse-submodules")},
        dashdash_paths=False,
    ),
    "push": Spec(
        {**_QUIET, **options(
            "repo =remote", "all", "mirror", "d delete", "tags", "n dry-run", "porcelain",
            "f force", "force-with-lease =?", "no-force-with-lease", "force-if-includes",
            "no-force-if-includes", "thin", "no-thin", "u set-upstream", "progress",
            "no-progress", "prune", "no-verify", "verify", "follow-tags", "no-follow-tags",
            "signed =?", "no-signed", "atomic", "no-atomic", "o push-option =", "4 ipv4",
            "6 ipv6",
        )},
        dashdash_paths=False,
    ),
    "add": Spec({**_PATHSPEC_FILE, **options(
        "n dry-run", "v verbose", "f force", "u update", "renormalize", "N intent-to-add",
        "A all", "no-all", "ignore-removal", "no-ignore-removal", "refresh",
        "ignore-errors", "ignore-missing", "sparse", "chmod =",
    )}),
    "commit": Spec({**_PATHSPEC_FILE, **_SIGN, **options(
        "q quiet", "v verbose", "F file =file", "author =", "date =", "m message =",
        "c reedit-message =", "C reuse-message =", "fixup =", "squash =", "reset-author",
        "trailer =", "s signoff", "no-signoff", "t template =file", "e edit", "no-edit",
        "cleanup =", "status", "no-status", "a all", "i include", "o only", "n no-verify",
        "verify", "dry-run", "short", "branch", "porcelain", "long", "z null", "amend",
        "no-post-rewrite", "u untracked-files =?", "allow-empty", "allow-empty-message",
    )}),
    "checkout": Spec({**_PATHSPEC_FILE, **options(
        "b =", "B =", "l", "guess", "no-guess", "overlay", "no-overlay", "q quiet",
        "progress", "no-progress", "m merge", "conflict =", "d detach", "t track =?",
        "no-track", "f force", "orphan =", "overwrite-ignore", "no-overwrite-ignore",
        "ignore-other-worktrees", "2 ours", "3 theirs", "ignore-skip-worktree-bits",
    )}),
    "switch": Spec(options(
        "c create =", "C force-create =", "guess", "no-guess", "discard-changes", "q quiet",
        "progress", "no-progress", "m merge", "conflict =", "d detach", "t track =?",
        "no-track", "f force", "orphan =", "overwrite-ignore", "no-overwrite-ignore",
        "ignore-other-worktrees",
    ), dashdash_paths=False),
    "restore": Spec({**_PATHSPEC_FILE, **options(
        "s source =", "S staged", "W worktree", "ignore-unmerged", "overlay", "no-overlay",
        "q quiet", "progress", "no-progress", "m merge", "conflict =", "2 ours",
        "3 theirs", "ignore-skip-worktree-bits",
    )}),
    "merge": Spec({**_STRATEGY, **_SIGN, **options(
        "n", "stat", "no-stat", "summary", "log =?", "no-log", "squash", "no-squash",
        "commit", "no-commit", "e edit", "no-edit", "cleanup =", "ff", "no-ff", "ff-only",
        "rerere-autoupdate", "no-rerere-autoupdate", "verify-signatures",
        "no-verify-signatures", "m message =", "F file =file", "into-name =", "v verbose",
        "q quiet", "abort", "quit", "continue", "allow-unrelated-histories", "progress",
        "no-progress", "autostash", "no-autostash", "overwrite-ignore", "signoff",
        "no-signoff", "no-verify", "verify",
    )}, dashdash_paths=False),
    "rebase": Spec({**_STRATEGY, **_SIGN, **options(
        "onto =", "keep-base", "no-keep-base", "no-verify", "verify", "q quiet",
        "v verbose", "n no-stat", "stat", "signoff", "committer-date-is-author-date",
        "reset-author-date", "ignore-date", "C =", "ignore-whitespace", "whitespace =",
        "f force-rebase", "no-ff", "continue", "skip", "abort", "quit", "apply", "m merge",
        "rerere-autoupdate", "no-rerere-autoupdate", "empty =", "update-refs",
        "no-update-refs", "autostash", "no-autostash", "r rebase-merges =?",
        "no-rebase-merges", "fork-point", "no-fork-point", "root", "reapply-cherry-picks",
        "no-reapply-cherry-picks",
    )}, dashdash_paths=False),
    "cherry-pick": Spec({**_SEQUENCER, **_SIGN, **options(
        "n no-commit", "e edit", "no-edit", "s signoff", "m mainline =",
        "strategy =strategy", "X strategy-option =", "x", "ff", "allow-empty",
        "allow-empty-message", "keep-redundant-commits",
    )}),
    "revert": Spec({**_SEQUENCER, **_SIGN, **options(
        "n no-commit", "e edit", "no-edit", "s signoff", "m mainline =",
        "strategy =strategy", "X strategy-option =", "reference",
    )}),
    "stash": Spec({**_PATHSPEC_FILE, **options(
        "k keep-index", "no-keep-index", "S staged", "p patch", "q quiet",
        "u include-untracked", "no-include-untracked", "only-untracked", "a all",
        "m message =", "index", "stat =?", "name-only", "name-status", "numstat", "z",
        "format =!",
    )}),
    "branch": Spec({**_QUIET, **_REF_FILTERS, **options(
        "t track =?", "no-track", "u set-upstream-to =", "unset-upstream", "r remotes",
        "abbrev =?", "no-abbrev", "a all", "d delete", "D", "m move", "M", "c copy", "C",
        "l list", "show-current", "create-reflog", "edit-description", "f force",
    )}, dashdash_paths=False),
    "tag": Spec({**_REF_FILTERS, **options(
        "l list", "n =?", "d delete", "v verify", "a annotate", "m message =",
        "F file =file", "e edit", "no-edit", "s sign", "cleanup =", "u local-user =",
        "f force", "create-reflog",
    )}, dashdash_paths=False),
    "remote": Spec(options(
        "v verbose", "f fetch", "tags", "no-tags", "t track =", "m master =", "mirror =?",
        "push", "all", "add", "d delete", "n dry-run", "a auto", "p prune", "progress",
        "no-progress",
    ), dashdash_paths=False),
    "reset": Spec({**_PATHSPEC_FILE, **options(
        "q quiet", "no-refresh", "refresh", "mixed", "soft", "hard", "merge", "keep",
        "N intent-to-add",
    )}),
    "rm": Spec({**_PATHSPEC_FILE, **options(
        "n dry-run", "q quiet", "cached", "f force", "r", "ignore-unmatch", "sparse",
    )}),
    "mv": Spec(options("v verbose", "n dry-run", "f force", "k", "sparse")),
    "clean": Spec(options("q quiet", "n dry-run", "f force", "d", "e exclude =", "x", "X")),
}
# fmt: on

MERGE_STRATEGIES = frozenset({"ort", "recursive", "resolve", "octopus", "ours", "subtree"})

__all__ = ["DIFF", "MERGE_STRATEGIES", "REVISION", "SPECS", "Option"]
