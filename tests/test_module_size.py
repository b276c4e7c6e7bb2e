"""No module of psdsos/ above MAX_LINES lines: a module that grows past it holds more than
one idea and is split (see docs/extending.md)."""

from __future__ import annotations

from test_layers import PKG, all_modules

MAX_LINES = 600


def test_modules_are_found():
    assert len(all_modules()) > 50


def test_no_module_above_the_limit():
    big = {str(p.relative_to(PKG)): n for p in all_modules()
           if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not big, f"modules above {MAX_LINES} lines: {big}"
