"""A generated Python project large enough to show how project diagnostics scale: modules
in packages with real cross-imports, a deliberate type error in every `error_every`th."""

from __future__ import annotations

import os
from pathlib import Path


def module_text(i: int, error: bool) -> str:
    """Module i imports module (i - 1) // 2: a tree of imports, a few levels deep."""
    up = (i - 1) // 2
    imports = f"from pkg{up // 50}.m{up} import make{up}\n" if i else ""
    base = f"make{up}()" if i else "0"
    wrong = f"bad{i}: int = 'not an int'\n" if error else ""
    return (
        f"{imports}\n\ndef make{i}() -> int:\n    return {base} + {i}\n\n\n"
        f"class Thing{i}:\n    size: int = {i}\n\n\n{wrong}"
    )


def generate(root: Path, modules: int, error_every: int = 10) -> list[str]:
    """Write `modules` modules (50 per package); the relative paths of those with a type
    error (`bad<i>: int = 'not an int'`) come back."""
    errors: list[str] = []
    for i in range(modules):
        package = root / f"pkg{i // 50}"
        package.mkdir(parents=True, exist_ok=True)
        (package / "__init__.py").touch()
        error = i % error_every == error_every - 1
        (package / f"m{i}.py").write_text(module_text(i, error))
        if error:
            errors.append(f"pkg{i // 50}/m{i}.py")
    return errors


def group_cpu(pid: int) -> float:
    """CPU seconds used so far by the process group of `pid` (a server and its children)."""
    group = os.getpgid(pid)
    ticks = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group:  # pgrp; utime and stime follow at 11 and 12
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")
