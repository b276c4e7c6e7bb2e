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
autodoc_default_options = {"members": True, "inherited-members": False}
numpydoc_show_class_members = False
numpydoc_validation_checks: set[str] = set()


html_theme = "pydata_sphinx_theme"
html_title = f"psdsos {release}"
html_theme_options = {"navigation_with_keys": False}


# ---- the gallery: every script of examples/ run in its default (fast) mode --------------
def _no_args(gallery_conf, script_vars):
    return []  # the examples' default mode (argparse reads sys.argv[1:])


extensions.append("sphinx_gallery.gen_gallery")
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r".*\.py$",  # execute every example
    "reset_argv": _no_args,
    "image_scrapers": ("matplotlib",),
    "abort_on_example_error": True,
    "download_all_examples": False,
    "remove_config_comments": True,
    "plot_gallery": "True",
}
