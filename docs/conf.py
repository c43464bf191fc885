"""Sphinx configuration for the glasstorch documentation (``make docs``).

The tutorials live in ``../tutorials`` (outside the source tree, so they can be
run on their own); they are copied into ``docs/tutorials/`` here, at config
time, and executed by myst-nb on every build.
"""

from __future__ import annotations

import filecmp
import shutil
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent


def _copy_tutorials() -> None:
    """Mirror ``tutorials/*.md`` into ``docs/tutorials/`` (a git-ignored folder)."""
    source, target = ROOT / "tutorials", DOCS / "tutorials"
    target.mkdir(exist_ok=True)
    wanted = {path.name for path in source.glob("*.md") if path.name != "README.md"}
    for stale in target.glob("*.md"):
        if stale.name not in wanted:
            stale.unlink()
    for name in wanted:
        src, dst = source / name, target / name
        if not dst.exists() or not filecmp.cmp(src, dst, shallow=False):
            shutil.copy2(src, dst)


_copy_tutorials()

# -- project -------------------------------------------------------------------
project = "glasstorch"
author = "glasstorch developers"
copyright = "2026, glasstorch developers"
release = "0.1.0"
version = "0.1"

# -- extensions ----------------------------------------------------------------
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "myst_nb",  # MyST markdown pages and executable notebooks
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb"}
exclude_patterns = ["_build", "jupyter_execute", "**.ipynb_checkpoints", "Thumbs.db", ".DS_Store"]

# autodoc / autosummary / napoleon: Google-style docstrings.
autosummary_generate = True
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_typehints_format = "short"
autodoc_default_options = {"show-inheritance": False}
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
# The modules' docstrings list what forward() takes under this heading.
napoleon_custom_sections = [("Forward arguments", "params_style")]
add_module_names = False

# MyST and myst-nb: the tutorials run on every build and must not fail.
myst_enable_extensions = ["colon_fence", "deflist", "dollarmath"]
myst_heading_anchors = 3
nb_execution_mode = "force"
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_execution_timeout = 300

# -- HTML ----------------------------------------------------------------------
html_theme = "furo"
html_title = "glasstorch"
html_static_path = []
