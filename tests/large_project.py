"""A generated Python project large enough to show how project diagnostics scale: modules
in packages with real cross-imports, a deliberate type error in every `error_every`th."""

from __future__ import annotations

from pathlib import Path


def module_text(i: int, error: bool) -> str:
    imports = f"from pkg{(i - 1) // 50}.m{i - 1} import make{i - 1}\n" if i else ""
    base = f"make{i - 1}()" if i else "0"
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
