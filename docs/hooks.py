"""MkDocs hook: fill generated content into pages when the site is built.

A page that contains the line ``<!-- deltaad.support_table() -->`` gets, in its place, the
Markdown that ``deltaad.support_table()`` returns: the list of supported functions is read
from deltaad's rule registries at build time, so it cannot drift from the code.
"""

import os
import sys

MARKER = "<!-- deltaad.support_table() -->"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _deltaad():
    try:
        import deltaad
    except ImportError:  # building from a source tree that is not installed
        sys.path.insert(0, os.path.join(ROOT, "src"))
        import deltaad
    return deltaad


def on_page_markdown(markdown, page, config, files, **kwargs):
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, _deltaad().support_table())
