"""Hover parsing per language, on markdown the real servers wrote (rust-analyzer 1.96,
typescript-language-server 5 with typescript 5.9, svelte-language-server 0.18,
intelephense 1.18, jdtls 1.59); the real-server modules check the same end to end."""

from __future__ import annotations

import pytest

from codeward.daemon.intel import hover

RUST_FN = (
    "\n```rust\ndemo::util\n```\n\n```rust\npub fn twice(x: i32) -> i32\n```\n\n---\n\nDoubles x."
)


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        (RUST_FN, ("pub fn twice(x: i32) -> i32", "function", None, "demo::util", "Doubles x.")),
        (
            "```rust\ndemo\n```\n\n```rust\nmod util\n```",
            ("mod util", "module", None, "demo", None),
        ),
        (
            "```rust\nlet n: i32\n```\n\n---\n\nsize = 4, align = 0x4, no Drop",
            ("let n: i32", "variable", "i32", None, "size = 4, align = 0x4, no Drop"),
        ),
        ("```rust\nx: i32\n```", ("x: i32", "variable", "i32", None, None)),
        # a path alone is the declaration (a primitive type), not a module
        ("```rust\ni32\n```", ("i32", None, None, None, None)),
        (
            "```rust\ndemo::Point\n```\n\n```rust\npub x: f64\n```",
            ("pub x: f64", "field", "f64", "demo::Point", None),
        ),
        (
            "```rust\ndemo\n```\n\n```rust\npub(crate) const unsafe fn f()\n```",
            ("pub(crate) const unsafe fn f()", "function", None, "demo", None),
        ),
        (
            "```rust\ndemo\n```\n\n```rust\npub const LIMIT: u32 = 10\n```",
            ("pub const LIMIT: u32 = 10", "constant", "u32", "demo", None),
        ),
        (
            "```rust\ndemo\n```\n\n```rust\nstruct Point\n```",
            ("struct Point", "struct", None, "demo", None),
        ),
    ],
)
def test_rust_analyzer(markdown: str, expected: tuple[object, ...]) -> None:
    parsed = hover.parse(markdown)
    assert parsed is not None
    assert (parsed.signature, parsed.kind, parsed.type, parsed.module, parsed.docs) == expected


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        (
            "\n```typescript\n(alias) twice(x: number): string\nimport twice\n```\nDoubles x.",
            ("twice(x: number): string", "alias", None, "Doubles x."),
        ),
        (
            "\n```typescript\nfunction twice(x: number): string\n```\nDoubles x.",
            ("function twice(x: number): string", "function", None, "Doubles x."),
        ),
        (
            "```typescript\n(method) Counter.bump(): number\n```\n",
            ("Counter.bump(): number", "method", None, None),
        ),
        (
            "```typescript\n(property) Counter.count: number\n```",
            ("Counter.count: number", "property", "number", None),
        ),
        ("```typescript\n(parameter) x: number\n```", ("x: number", "parameter", "number", None)),
        ('```typescript\nconst s: "é😀中"\n```', ('const s: "é😀中"', "constant", '"é😀中"', None)),
        (
            "```typescript\nlet n: number = 2\n```",
            ("let n: number = 2", "variable", "number", None),
        ),
        ("```typescript\nclass Counter\n```", ("class Counter", "class", None, None)),
        # the Svelte server: the same blocks, docs after a rule
        (
            "```typescript\n(alias) twice(x: number): number\nimport twice\n```\n---\nDoubles x.",
            ("twice(x: number): number", "alias", None, "Doubles x."),
        ),
        # JavaScript files get typescript blocks too; a bare `import` is kept
        ("```javascript\nimport x\n```", ("import x", None, None, None)),
    ],
)
def test_typescript(markdown: str, expected: tuple[object, ...]) -> None:
    parsed = hover.parse(markdown)
    assert parsed is not None
    assert (parsed.signature, parsed.kind, parsed.type, parsed.docs) == expected
    assert parsed.module is None  # the tool finds it from the definition


PHP_METHOD = (
    "__App\\\\Util::twice__\n\nDoubles x.\n\n```php\n<?php\n"
    "public static function twice(int $x): int { }\n```\n\n_@param_ `int $x`\n\n_@return_ `int`"
)


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        (
            PHP_METHOD,
            (
                "public static function twice(int $x): int",
                "method",
                None,
                "App\\Util",
                "Doubles x.\n\n_@param_ `int $x`\n\n_@return_ `int`",
            ),
        ),
        (
            "__App\\\\Util__\n\n```php\n<?php\nclass Util { }\n```",
            ("class Util", "class", None, "App", None),
        ),
        (
            "__half__\n\n```php\n<?php\nfunction half(float $a): float { }\n```",
            ("function half(float $a): float", "function", None, None, None),
        ),
        ("_@var_ `int $n`", ("int $n", "variable", "int", None, "_@var_ `int $n`")),
        ("_@param_ `int $x`", ("int $x", "parameter", "int", None, "_@param_ `int $x`")),
        ("_@var_ `$n`", ("$n", "variable", None, None, "_@var_ `$n`")),
    ],
)
def test_intelephense(markdown: str, expected: tuple[object, ...]) -> None:
    parsed = hover.parse(markdown)
    assert parsed is not None
    assert (parsed.signature, parsed.kind, parsed.type, parsed.module, parsed.docs) == expected


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        (
            "```java\nint demo.Util.twice(int x)\n```\n\nDoubles x.\n\n* **Parameters:**\n"
            "  * **x**\n\nSource: *[demo](src/demo/Util.java#5)*",
            (
                "int demo.Util.twice(int x)",
                "method",
                None,
                "demo.Util",
                "Doubles x.\n\n* **Parameters:**\n  * **x**",
            ),
        ),
        ("```java\nint twice(int x)\n```", ("int twice(int x)", "method", None, None, None)),
        ("```java\ndemo.Util\n```", ("demo.Util", None, None, None, None)),
        ("```java\npublic class Util\n```", ("public class Util", "class", None, None, None)),
        ("```java\nString s\n```", ("String s", "variable", "String", None, None)),
        ("```java\nint n = 4\n```", ("int n = 4", None, None, None, None)),
    ],
)
def test_jdtls(markdown: str, expected: tuple[object, ...]) -> None:
    parsed = hover.parse(markdown)
    assert parsed is not None
    assert (parsed.signature, parsed.kind, parsed.type, parsed.module, parsed.docs) == expected


def test_nothing_to_show() -> None:
    assert hover.parse("") is None and hover.parse("  \n") is None
    plain = hover.parse("just words")
    assert plain is not None and plain.signature is None and plain.docs == "just words"
