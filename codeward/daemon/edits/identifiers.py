"""Whether a new name is an identifier of a language (checked before a rename is asked for).

Servers differ: basedpyright answers a rename to `not valid` with an empty edit, as if
nothing used the symbol. A language listed here has its identifier rules and reserved
words checked first; any other language is left to its server's `prepareRename` and answer.
"""

from __future__ import annotations

import keyword
import re

_C_LIKE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_UNICODE = re.compile(r"[^\W\d]\w*\Z")  # a letter or `_`, then letters, digits, `_`
_JS = re.compile(r"(?:[^\W\d]|\$)[\w$]*\Z")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_C_WORDS = _words(
    "auto break case char const continue default do double else enum extern float for goto "
    "if inline int long register restrict return short signed sizeof static struct switch "
    "typedef union unsigned void volatile while _Bool _Complex _Imaginary bool true false "
    "alignas alignof nullptr static_assert thread_local typeof"
)
_CPP_WORDS = _C_WORDS | _words(
    "asm catch class concept consteval constexpr constinit const_cast co_await co_return "
    "co_yield decltype delete dynamic_cast explicit export friend mutable namespace new "
    "noexcept operator private protected public reinterpret_cast requires static_cast "
    "template this throw try typeid typename using virtual wchar_t char8_t char16_t "
    "char32_t"
)
_GO_WORDS = _words(
    "break case chan const continue default defer else fallthrough for func go goto if "
    "import interface map package range return select struct switch type var"
)
_JS_WORDS = _words(
    "break case catch class const continue debugger default delete do else enum export "
    "extends false finally for function if import in instanceof new null return super "
    "switch this throw true try typeof var void while with let static yield await"
)
_RUST_WORDS = _words(
    "as async await break const continue crate dyn else enum extern false fn for if impl "
    "in let loop match mod move mut pub ref return self Self static struct super trait "
    "true type unsafe use where while"
)

# language -> (pattern of an identifier, reserved words)
RULES: dict[str, tuple[re.Pattern[str], frozenset[str]]] = {
    "python": (_UNICODE, frozenset(keyword.kwlist)),
    "go": (_UNICODE, _GO_WORDS),
    "c": (_C_LIKE, _C_WORDS),
    "cpp": (_C_LIKE, _CPP_WORDS),
    "rust": (_UNICODE, _RUST_WORDS),
    **{
        name: (_JS, _JS_WORDS)
        for name in ("typescript", "typescriptreact", "javascript", "javascriptreact")
    },
}


def invalid_reason(language: str, name: str) -> str | None:
    """Why `name` cannot be an identifier of `language`, or None when it can (or when the
    language has no rules here: its server decides)."""
    rules = RULES.get(language)
    if rules is None:
        return None
    pattern, reserved = rules
    if not name or not pattern.match(name) or (language == "python" and not name.isidentifier()):
        return f"{name!r} is not a {language} identifier"
    if name in reserved:
        return f"{name!r} is a reserved word in {language}"
    return None
