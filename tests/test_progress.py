"""Progress bars (tqdm) of grid_search_cv and of the CLI's searches.

``verbose=True``/``1`` shows the bar on stderr, ``0``/``False`` is silent, the default
``None`` shows it only where someone watches (a terminal or a notebook) and once the search
has lasted ``AUTO_DELAY`` seconds: pytest's capture is not a terminal, so the default is
silent here; a stream whose ``isatty()`` is True stands for a terminal.
"""

import contextlib
import io
import sys

import pytest

from psdsos import PSDRegressor
from psdsos.cli import main
from psdsos.datasets import make_bures_geodesic
from psdsos.model_selection import _progress, grid_search_cv

GRID = {"lam2": [1e-1, 1e-2]}


@pytest.fixture(scope="module")
def data():
    return make_bures_geodesic(8, random_state=3)


def _search(data, **kw):
    t, M = data
    return grid_search_cv(PSDRegressor("exponential"), t, M, GRID, cv=2, scoring="neg_mse",
                          refit=False, **kw)


class _Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("verbose", [True, 1, 2])
def test_bar_shown_when_asked(data, capsys, verbose):
    _search(data, verbose=verbose)
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err
    assert "2 candidates x 2 splits = 4 fits" in err  # the header line
    assert "grid search: 100%|" in err and "fits 4/4" in err  # tqdm's bar, completed
    assert "fit/s" in err or "s/fit" in err  # its rate (and elapsed<remaining time)
    assert err.endswith("\n")  # the bar ends its line


@pytest.mark.parametrize("verbose", [False, 0, -1])
def test_silent_when_verbose_is_zero(data, capsys, verbose):
    _search(data, verbose=verbose)
    assert capsys.readouterr().err == ""


def test_default_silent_when_not_a_terminal(data, capsys):
    assert not sys.stderr.isatty()  # pytest's capture
    _search(data)
    assert capsys.readouterr().err == ""


def test_default_shows_the_bar_in_a_terminal_once_the_search_is_long(data, monkeypatch):
    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    monkeypatch.setattr(_progress, "AUTO_DELAY", 0.0)  # every search counts as long
    _search(data)
    err = term.getvalue()
    assert "grid search: 100%|" in err and "fits 4/4" in err
    assert "candidates x" not in err  # the header line is for verbose=True only


def test_default_quiet_in_a_terminal_for_a_short_search(data, monkeypatch):
    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    monkeypatch.setattr(_progress, "AUTO_DELAY", 600.0)  # no search here lasts that long
    _search(data)
    assert term.getvalue() == ""


def test_default_shows_the_bar_in_a_notebook(data, monkeypatch):
    """In a Jupyter kernel (detected as tqdm.auto does) the bar is tqdm.auto's; outside a
    real kernel tqdm.auto falls back to the text bar, which is what this test sees."""
    err = io.StringIO()  # a notebook's stderr is not a terminal
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(_progress, "_in_notebook", lambda: True)
    monkeypatch.setattr(_progress, "AUTO_DELAY", 0.0)
    _search(data)
    assert "fits 4/4" in err.getvalue()


def test_bar_counts_every_fit_with_parallel_jobs(data, capsys):
    _search(data, verbose=True, n_jobs=2, backend="threading")
    assert "fits 4/4" in capsys.readouterr().err


def test_bar_ends_its_line_on_an_error(data, capsys):
    t, M = data
    with pytest.raises(ValueError, match="lam2 = 0"):
        grid_search_cv(PSDRegressor("exponential"), t, M, {"lam2": [1e-2, 0.0]}, cv=2,
                       verbose=True, error_score="raise")
    err = capsys.readouterr().err
    assert "grid search:" in err and err.endswith("\n")


@pytest.mark.parametrize("verbose", ["yes", 0.5, [1]])
def test_bad_verbose(data, verbose):
    with pytest.raises(ValueError, match="verbose must be None, a bool or an int"):
        _search(data, verbose=verbose)


# ------------------------------------------------------------------------------------------
# the CLI: the bar without --quiet, nothing with --quiet
# ------------------------------------------------------------------------------------------

DEMO = ["convex-fit", "--demo", "--n-samples", "20", "--dim", "1", "--cv", "2", "--rho", "1e-3",
        "--lam2", "1e-3,1e-2", "--sigma", "3", "--max-iter", "50", "--random-state", "3"]


def _run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_cli_bar_on_stderr_by_default():
    code, out, err = _run(DEMO)
    assert code == 0, err
    assert "grid search: 100%|" in err and "fits 4/4" in err
    assert "fits 4/4" not in out and "grid search:" not in out  # stdout: the results only


def test_cli_quiet_has_no_bar():
    code, out, err = _run([*DEMO, "--quiet"])
    assert code == 0, err
    assert "grid search" not in err and "fits 4/4" not in err and "%|" not in err
    assert "2 candidates x 2 folds = 4 fits" in out  # the summary is a result, on stdout
