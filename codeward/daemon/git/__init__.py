"""Safe git: tiers and argument rules, the repository's config scan, a hardened runner,
parsers of git's machine formats, and the files a write changed."""

from codeward.daemon.git.command import run_git
from codeward.daemon.git.policy import Decision, Tier, classify

__all__ = ["Decision", "Tier", "classify", "run_git"]
