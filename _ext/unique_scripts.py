"""Each page includes each of its scripts once.

Sphinx 7.4 can list an inline script twice when an extension registers it after the HTML
builder has started (sphinx-thebe and sphinx-togglebutton do): once under the file name
``None`` and once under ``''``. sphinx-thebe's inline script declares ``const THEBE_JS_URL``,
so its second copy is a JavaScript error on every page. This drops the repeats.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx


def _key(script: Any) -> tuple:
    filename = getattr(script, "filename", script) or ""
    priority = getattr(script, "priority", None)
    attributes = getattr(script, "attributes", {}) or {}
    return (str(filename), priority, tuple(sorted((k, str(v)) for k, v in attributes.items())))


def _drop_repeated_scripts(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    scripts = context.get("script_files")
    if not scripts:
        return
    seen: set[tuple] = set()
    unique = []
    for script in scripts:
        key = _key(script)
        if key not in seen:
            seen.add(key)
            unique.append(script)
    scripts[:] = unique  # in place: the builder restores its own list after each page


def setup(app: Sphinx) -> dict[str, Any]:
    # After the other handlers, which may add page-specific scripts.
    app.connect("html-page-context", _drop_repeated_scripts, priority=900)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
