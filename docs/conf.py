"""Sphinx configuration of the psdsos documentation (``python -m sphinx -W docs docs/_build``)."""

from __future__ import annotations

import psdsos

project = "psdsos"
author = "The psdsos developers"
copyright = "2026, the psdsos developers"  # noqa: A001
release = psdsos.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3

autosummary_generate = True
templates_path = ["_templates"]
autodoc_default_options = {"members": True, "inherited-members": False}
numpydoc_show_class_members = False
numpydoc_validation_checks: set[str] = set()


html_theme = "pydata_sphinx_theme"
html_title = f"psdsos {release}"
html_theme_options = {"navigation_with_keys": False}
html_context = {"default_mode": "light"}


# ---- the gallery: every script of examples/ run in its default (fast) mode --------------
extensions.append("sphinx_gallery.gen_gallery")
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r".*\.py$",  # execute every example (no arguments: the default mode)
    "image_scrapers": ("matplotlib",),
    "abort_on_example_error": True,
    "download_all_examples": False,
    "remove_config_comments": True,
    "plot_gallery": "True",
}


def _skip_member(app, what, name, obj, skip, options):
    # scikit-learn's generated metadata-routing methods (set_fit_request, ...): documented
    # by scikit-learn, with references into its own documentation
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return skip


def setup(app):
    app.connect("autodoc-skip-member", _skip_member)
