"""A link on every page to the same page in the book's other language.

The English pages are ``book/NAME`` in the site's root, the Chinese pages ``NAME`` in its
``zh/`` folder, built by a second Sphinx project (``tools/zh_site.py``). Each project names the
other in its configuration, ``language_switch``: ``label`` (the link's text), ``lang`` (the
other language's code), ``strip`` (the prefix of this project's page names that the other
lacks), ``prefix`` (where the other's pages are, from this project's root) and ``only_here``
(pages that have no counterpart, such as the Chinese term list: no link). The link goes at
the top of the page's content, and the page's head names the other version
(``<link rel="alternate" hreflang=...>``).
"""

from __future__ import annotations

from html import escape
from typing import Any

from sphinx.application import Sphinx


def other_language_url(pagename: str, strip: str, prefix: str) -> str:
    """The relative URL, from the page ``pagename``, of the same page in the other language."""
    up = "../" * pagename.count("/")
    return f"{up}{prefix}{pagename.removeprefix(strip)}.html"


def _add_link(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any],
              doctree: Any) -> None:
    switch = app.config.language_switch
    if not switch or doctree is None or "body" not in context:
        return  # a page made by the builder (search, index), not a document
    if pagename in switch.get("only_here", []):
        return
    url = escape(other_language_url(pagename, switch.get("strip", ""), switch["prefix"]))
    lang = escape(switch["lang"])
    context["body"] = (
        f'<p class="language-switch" style="text-align: right">'
        f'<a href="{url}" hreflang="{lang}" lang="{lang}">{escape(switch["label"])}</a></p>\n'
        + context["body"]
    )
    context["metatags"] = context.get("metatags", "") + (
        f'\n<link rel="alternate" hreflang="{lang}" href="{url}" />'
    )


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("language_switch", {}, "html")
    app.connect("html-page-context", _add_link)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
