"""Sphinx configuration for the glasstorch documentation (``make docs``).

The tutorials live in ``../tutorials`` (outside the source tree, so they can be
run on their own); they are copied into ``docs/tutorials/`` here, at config
time, and executed by myst-nb on every build. The course's table of contents
on the landing page (``docs/tutorials/_path.md``, included by ``index.md``) is
written here too, from :data:`CHAPTERS` and the chapters that exist, and so is
the API coverage table (``docs/api/coverage.md``, :mod:`glasstorch.coverage`).

The site works offline: MathJax comes from the ``sphinx-mathjax-offline``
package (MathJax 3, Apache 2.0), which copies it into ``_static/mathjax``, so
no page loads anything from another host.
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
        if stale.name not in wanted and stale.name != "_path.md":
            stale.unlink()
    for name in wanted:
        src, dst = source / name, target / name
        if not dst.exists() or not filecmp.cmp(src, dst, shallow=False):
            shutil.copy2(src, dst)


#: The course: (number, planned title, paper section). A chapter exists when
#: ``tutorials/NN_*.md`` does; the landing page links those (under their own
#: titles) and lists the rest under the planned ones.
CHAPTERS = [
    (1, "Tensors, storage and strides", "§4.2, §5.1"),
    (2, "Autograd from the inside", "§4.3"),
    (3, "Modules and training", "§4.1"),
    (4, "Data loading in parallel", "§4.2, §5.4"),
    (5, "Interoperability: NumPy and DLPack", "§4.2"),
    (6, "Inside the core", "§5.1"),
    (7, "Memory and reference counting", "§5.5"),
    (8, "Multiprocessing and Hogwild", "§5.4"),
    (9, "Asynchronous execution", "§5.2, §6.1"),
    (10, "The caching allocator", "§5.3, §6.2"),
    (11, "Convolutional networks and the benchmarks", "§6.3"),
    (12, "Sequence models", "§4.1, §6.3"),
    (13, "Data-parallel training", "§8"),
]


def _write_course_path() -> None:
    """Write ``docs/tutorials/_path.md``: the chapters, linked where they exist."""
    lines = ["| | chapter | paper |", "| --- | --- | --- |"]
    for number, title, section in CHAPTERS:
        found = sorted((ROOT / "tutorials").glob(f"{number:02d}_*.md"))
        if found:  # linked under the chapter's own title
            entry = f"{{doc}}`/tutorials/{found[0].stem}`"
        else:
            entry = f"{title} *(in preparation)*"
        lines.append(f"| {number} | {entry} | {section} |")
    text = "\n".join(lines) + "\n"
    path = DOCS / "tutorials" / "_path.md"
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def _write_coverage_page() -> None:
    """Write ``docs/api/coverage.md``, the API coverage table, from glasstorch as it is now.

    PyTorch's side comes from the snapshot committed under
    ``glasstorch/coverage/data``, so the build needs no PyTorch.
    """
    import sys

    sys.path.insert(0, str(ROOT))
    from glasstorch.coverage.page import write_page

    write_page(DOCS / "api" / "coverage.md")


_copy_tutorials()
_write_course_path()
_write_coverage_page()

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
    "sphinx-mathjax-offline",  # MathJax served from the build, not a CDN
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb"}
exclude_patterns = [
    "_build",
    "jupyter_execute",
    "**.ipynb_checkpoints",
    "Thumbs.db",
    ".DS_Store",
    "tutorials/_path.md",  # included by index.md, not a page of its own
]

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
