"""Import every tool module, so that each registers its tools."""

from codeward.daemon.tools import (
    call_hierarchy,  # noqa: F401
    definitions,  # noqa: F401
    diagnostics,  # noqa: F401
    edit_file,  # noqa: F401
    edit_symbol,  # noqa: F401
    edits,  # noqa: F401
    git_tool,  # noqa: F401
    hierarchy,  # noqa: F401
    hover,  # noqa: F401
    lua_tool,  # noqa: F401
    move_file,  # noqa: F401
    references,  # noqa: F401
    review,  # noqa: F401
    symbols,  # noqa: F401
)
