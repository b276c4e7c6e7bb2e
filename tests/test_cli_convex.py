"""Tests for ``psdsos convex-fit`` / ``psdsos convex-predict`` and ``plot_convex_fit``.

The fits run on tiny problems (n = 20-24, 2 or 3 folds, one or two candidates).  Most use
``--solver primal`` (Clarabel): on these sizes an interior-point solve takes a fraction of a
second, while the dual's accelerated gradient runs to its iteration cap; the dual path is
exercised by the demo test with a small ``--max-iter``.
"""

import contextlib
import csv
import io
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from psdsos.cli import COLUMNS_KEY, RELATIVE_DEFICIT_TOL, SCALING_KEY, main

#: Fast settings shared by the fitting tests: one candidate, primal interior point.
FAST = ["--cv", "2", "--rho", "1e-3", "--lam2", "1e-3", "--sigma", "2", "--solver", "primal",
        "--quiet"]
#: Faster still where the fit's quality is not looked at: the dual, capped at 50 iterations.
CAPPED = [*FAST, "--solver", "dual", "--max-iter", "50"]


def _fields(text):
    return {line.split(":", 1)[0].strip(): line.split(":", 1)[1].strip()
            for line in text.splitlines() if ":" in line}


def _write_csv(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return str(path)


def _data(n=20, d=1, seed=0, concave=False):
    from psdsos.datasets import make_convex_regression

    X, y = make_convex_regression(n, d, noise=0.1, random_state=seed)
    return X, (-y if concave else y)


def _run(argv):
    """main(argv) with stdout and stderr captured: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def fitted_1d(tmp_path_factory):
    """One tiny 1-D fit from a CSV with an id column and columns in a shuffled order."""
    tmp = tmp_path_factory.mktemp("convex1d")
    X, y = _data(20, 1)
    data = _write_csv(tmp / "train.csv", ["id", "y", "x"],
                      [[f"s{i}", repr(float(y[i])), repr(float(X[i, 0]))] for i in range(20)])
    model = tmp / "model.npz"
    plot = tmp / "fit.png"
    argv = ["convex-fit", data, "--target", "y", *FAST, "--model", str(model)]
    try:
        import matplotlib  # noqa: F401

        argv += ["--plot", str(plot)]
    except ImportError:
        plot = None
    code, out, err = _run(argv)
    assert code == 0, err
    return {"tmp": tmp, "data": data, "X": X, "y": y, "model": model, "plot": plot,
            "out": out, "err": err}


# ------------------------------------------------------------------------------------------
# convex-fit
# ------------------------------------------------------------------------------------------


def test_fit_csv_reports_and_selects_features(fitted_1d):
    f = _fields(fitted_1d["out"])
    assert f["psdsos convex-fit"] == fitted_1d["data"]
    assert f["data"] == "n = 20 rows, features: x; target: y; convex fit"
    assert f["ignored non-numeric columns"] == "id"
    assert f["grid"] == ("rho in {0.001}, lam2 in {0.001}, sigma in {2} x scale (--rho, --lam2, "
                         "--sigma given, the rest from the small grid)")
    assert "exact features" in f["model"] and "solver = primal (CLARABEL)" in f["model"]
    assert "1 candidates x 2 folds = 2 fits" in f["2-fold CV (shuffled, seed 0)"]
    assert f["selected"] == "rho = 0.001, lam2 = 0.001, sigma = 2 x scale"
    # standardized 1-D features: scale = sqrt(1 / 2); in x's units times std(x)
    sx = float(np.std(fitted_1d["X"][:, 0]))
    assert f["bandwidth"] == (f"1.41421 standardized units (in the features' units: "
                              f"x: {float(f'{np.sqrt(2.0) * sx:.6g}'):g})")
    assert float(f["CV error (MSE)"]) > 0
    assert float(f["training error (MSE)"]) > 0
    assert float(f["convexity deficit"].split()[0]) >= 0
    assert f["model file"] == str(fitted_1d["model"])
    assert "Traceback" not in fitted_1d["err"]


def test_fit_1d_plot_written(fitted_1d):
    if fitted_1d["plot"] is None:
        pytest.skip("matplotlib not installed")
    assert _fields(fitted_1d["out"])["figure"] == str(fitted_1d["plot"])
    assert fitted_1d["plot"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.filterwarnings("ignore:Solution may be inaccurate")
@pytest.mark.filterwarnings("ignore::psdsos.solvers.InaccurateSolutionWarning")
def test_round_trip_fit_save_predict(fitted_1d):
    """convex-predict's column == ConvexRegressor.predict of the loaded model == a direct fit."""
    from psdsos import load
    from psdsos.estimators import ConvexRegressor
    from psdsos.sos import load_npz

    model = load(fitted_1d["model"])
    assert isinstance(model, ConvexRegressor)
    assert (model.rho, model.lam2, model.lam1) == (1e-3, 1e-3, 0.0)
    assert model.sigma == pytest.approx(2.0 * np.sqrt(0.5), rel=1e-12)
    _, meta = load_npz(fitted_1d["model"])
    assert meta[COLUMNS_KEY] == {"features": ["x"], "target": "y"}

    # the model is fitted on the standardized columns, whose means and standard deviations
    # the file stores; the same fit by hand:
    X, y = fitted_1d["X"], fitted_1d["y"]
    sc = meta[SCALING_KEY]
    np.testing.assert_allclose(sc["x_mean"], X.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(sc["x_scale"], X.std(axis=0), rtol=1e-12)
    assert (sc["y_mean"], sc["y_scale"]) == (pytest.approx(y.mean(), rel=1e-12),
                                             pytest.approx(y.std(), rel=1e-12))
    Xs, ys = (X - X.mean(axis=0)) / X.std(axis=0), (y - y.mean()) / y.std()
    direct = ConvexRegressor(sigma=2.0 * np.sqrt(0.5), rho=1e-3, lam1=0.0, lam2=1e-3,
                             solver="primal", primal_solver="CLARABEL",
                             random_state=0).fit(Xs, ys)
    np.testing.assert_allclose(model.predict(Xs), direct.predict(Xs), rtol=1e-6, atol=1e-8)

    # new rows, columns in another order, an extra column: predictions to a file
    Xn = np.linspace(X.min(), X.max(), 7)[:, None]
    new = _write_csv(fitted_1d["tmp"] / "new.csv", ["x", "note"],
                     [[repr(float(v)), "a,b"] for v in Xn[:, 0]])
    out = fitted_1d["tmp"] / "pred.csv"
    code, stdout, err = _run(["convex-predict", str(fitted_1d["model"]), new, "--out", str(out)])
    assert code == 0, err
    assert _fields(stdout)["predictions"] == f"{out} (column 'y_predicted')"
    with open(out, newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["x", "note", "y_predicted"]
    assert [r[1] for r in rows[1:]] == ["a,b"] * 7  # other columns copied, quoted
    pred = np.array([float(r[2]) for r in rows[1:]])

    def in_user_units(Xu):
        return sc["y_mean"] + sc["y_scale"] * model.predict((Xu - sc["x_mean"]) / sc["x_scale"])

    np.testing.assert_array_equal(pred, in_user_units(Xn))  # repr round-trips floats

    # the training file (target present): CSV on stdout, nothing else
    code, stdout, err = _run(["convex-predict", str(fitted_1d["model"]), fitted_1d["data"]])
    assert code == 0, err
    rows = list(csv.reader(io.StringIO(stdout)))
    assert rows[0] == ["id", "y", "x", "y_predicted"] and len(rows) == 21
    np.testing.assert_array_equal([float(r[3]) for r in rows[1:]], in_user_units(X))


def test_predict_reports_mse_when_target_present(fitted_1d):
    out = fitted_1d["tmp"] / "pred_train.csv"
    code, stdout, err = _run(["convex-predict", str(fitted_1d["model"]), fitted_1d["data"],
                              "--out", str(out), "--column", "fx"])
    assert code == 0, err
    f = _fields(stdout)
    assert float(f["error (MSE) against column 'y'"]) == pytest.approx(
        float(_fields(fitted_1d["out"])["training error (MSE)"]), rel=1e-5)
    assert "(column 'fx')" in f["predictions"]


def test_predict_model_saved_from_python_needs_features(tmp_path):
    from psdsos.estimators import ConvexRegressor

    X, y = _data(12, 1)
    m = ConvexRegressor(sigma=3.0, solver="primal", primal_solver="CLARABEL").fit(X, y)
    m.save(tmp_path / "py.npz")
    data = _write_csv(tmp_path / "d.csv", ["t"], [[repr(float(v))] for v in X[:, 0]])
    code, _, err = _run(["convex-predict", str(tmp_path / "py.npz"), data])
    assert code == 1 and "no feature names" in err and "--features" in err
    code, stdout, err = _run(["convex-predict", str(tmp_path / "py.npz"), data,
                              "--features", "t"])
    assert code == 0, err
    rows = list(csv.reader(io.StringIO(stdout)))
    assert rows[0] == ["t", "predicted"]
    np.testing.assert_array_equal([float(r[1]) for r in rows[1:]], m.predict(X))


def test_fit_2d_concave_with_plot(tmp_path):
    pytest.importorskip("matplotlib")
    X, y = _data(20, 2, concave=True)
    data = _write_csv(tmp_path / "c.csv", ["u", "v", "z"],
                      [[repr(float(a)), repr(float(b)), repr(float(c))]
                       for (a, b), c in zip(X, y, strict=True)])
    plot = tmp_path / "fit2d.png"
    code, out, err = _run(["convex-fit", data, "--target", "z", "--features", "v,u",
                           *FAST, "--concave", "--plot", str(plot), "--model",
                           str(tmp_path / "m")])
    assert code == 0, err
    f = _fields(out)
    assert f["data"] == "n = 20 rows, features: v, u; target: z; concave fit"
    assert "of the curvature scale" in f["concavity deficit"]
    assert f["model file"] == str(tmp_path / "m.npz")  # numpy appends .npz
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    from psdsos import load
    from psdsos.sos import load_npz

    model = load(tmp_path / "m.npz")
    assert model.concave
    # column order of --features is the model's feature order; standardized units
    sc = load_npz(tmp_path / "m.npz")[1][SCALING_KEY]
    Xs = (X[:, ::-1] - sc["x_mean"]) / sc["x_scale"]
    pred = sc["y_mean"] + sc["y_scale"] * model.predict(Xs)
    np.testing.assert_allclose(pred.mean(), y.mean(), atol=2.0)


def test_fit_three_features_skips_plot(tmp_path):
    X, y = _data(20, 3)
    data = _write_csv(tmp_path / "d3.csv", ["a", "b", "c", "y"],
                      [[*map(repr, map(float, X[i])), repr(float(y[i]))] for i in range(20)])
    plot = tmp_path / "none.png"
    code, out, err = _run(["convex-fit", data, "--target", "y", *CAPPED, "--plot", str(plot)])
    assert code == 0, err
    assert "--plot skipped: cannot plot a function of 3 features" in err
    assert "figure" not in _fields(out) and not plot.exists()
    assert "Traceback" not in err


def test_demo_tiny_dual_with_progress_bar(capsys):
    """The default solver (dual) on the built-in data of eq. (30), tiny and capped."""
    code = main(["convex-fit", "--demo", "--n-samples", "20", "--dim", "1", "--cv", "2",
                 "--rho", "1e-3", "--lam2", "1e-3,1e-2", "--sigma", "3", "--max-iter", "300",
                 "--random-state", "3"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    f = _fields(captured.out)
    assert f["psdsos convex-fit"].startswith("demo data, eq. (30) of the PSD paper")
    assert "seed = 3" in f["psdsos convex-fit"]
    assert f["data"] == "n = 20 rows, features: x1; target: y; convex fit"
    assert "solver = dual" in f["model"]
    assert "2 candidates x 2 folds = 4 fits" in f["2-fold CV (shuffled, seed 3)"]
    assert f["selected"].startswith("rho = 0.001, lam2 = ")
    assert float(f["CV error (MSE)"]) > 0
    assert float(f["held-out error (MSE) against the noiseless function, 1000 new points"]) > 0
    assert "fits 4/4" in captured.err and "total time" in captured.err
    assert "Traceback" not in captured.err


def test_paper_grid_is_appendix_d2():
    """sigma as factors of the data's scale: the paper's sigma^2 in {1, 5, 10} on inputs
    uniform in [-2 pi, 2 pi]^2, whose scale_bandwidth is 2 pi sqrt(1 / 3)."""
    from psdsos.cli import _convex_grid

    grid, text = _convex_grid("paper")
    np.testing.assert_allclose(grid["lam2"], [1e-3, 1e-4, 1e-5, 1e-6, 1e-7])
    np.testing.assert_allclose(np.square(np.multiply(grid["sigma"], 2 * np.pi / np.sqrt(3))),
                               [1.0, 5.0, 10.0])
    assert 1e-5 in grid["rho"]  # the value selected in the paper's Figure 4
    assert "Appendix D.2" in text
    small, _ = _convex_grid("small")
    assert len(small["rho"]) * len(small["lam2"]) * len(small["sigma"]) == 12
    # bandwidths of 1 to 4 x scale: narrower kernels bend between the constraint points
    assert min(small["sigma"]) == 1.0 and max(small["sigma"]) == 4.0


def test_default_n_landmarks_follows_the_paper(tmp_path):
    """Nystrom rank 25 when every CV training fold has more than 25 rows, as the paper."""
    X, y = _data(30, 1)
    data = _write_csv(tmp_path / "d.csv", ["x", "y"],
                      [[repr(float(a)), repr(float(b))] for a, b in zip(X[:, 0], y, strict=True)])
    code, out, err = _run(["convex-fit", data, "--target", "y", *CAPPED])  # folds of 15 rows
    assert code == 0, err
    assert "exact features" in _fields(out)["model"]
    code, out, err = _run(["convex-fit", data, "--target", "y", *CAPPED, "--cv", "10"])
    assert code == 0, err  # 27 training rows per fold
    assert "Nystrom rank 25" in _fields(out)["model"]


# ------------------------------------------------------------------------------------------
# malformed input: one line on stderr, exit 1, no traceback
# ------------------------------------------------------------------------------------------


def _good_rows(n=6):
    X, y = _data(n, 2)
    return [[repr(float(a)), repr(float(b)), repr(float(c))]
            for (a, b), c in zip(X, y, strict=True)]


def _bad_files(tmp):
    rows = _good_rows()
    files = {}

    def put(name, header, body):
        files[name] = _write_csv(tmp / f"{name}.csv", header, body)

    put("ok", ["a", "b", "y"], rows)
    put("text_target", ["a", "b", "y"], rows[:3] + [[rows[3][0], rows[3][1], "abc"]] + rows[4:])
    put("mixed_feature", ["a", "b", "y"], rows[:2] + [["1.0", "n/a", "2.0"]] + rows[3:])
    put("nan_cell", ["a", "b", "y"], rows[:4] + [["nan", "1.0", "2.0"]] + rows[5:])
    put("inf_cell", ["a", "b", "y"], rows[:4] + [["1.0", "-inf", "2.0"]] + rows[5:])
    put("empty_cell", ["a", "b", "y"], rows[:1] + [["1.0", "", "2.0"]] + rows[2:])
    put("one_row", ["a", "b", "y"], rows[:1])
    put("target_twice", ["y", "a", "y"], rows)
    put("only_target", ["y"], [[r[2]] for r in rows])
    put("text_only", ["name", "y"], [[f"n{i}", r[2]] for i, r in enumerate(rows)])
    put("header_only", ["a", "b", "y"], [])
    put("three_rows", ["a", "b", "y"], rows[:3])
    files["ragged"] = str(tmp / "ragged.csv")
    pathlib.Path(files["ragged"]).write_text("a,b,y\n1,2,3\n4,5\n", encoding="utf-8")
    files["empty"] = str(tmp / "empty.csv")
    pathlib.Path(files["empty"]).write_text("\n\n", encoding="utf-8")
    files["latin1"] = str(tmp / "latin1.csv")
    pathlib.Path(files["latin1"]).write_bytes("caf\xe9,y\n1,2\n3,4\n5,6\n".encode("latin-1"))
    files["nul"] = str(tmp / "nul.csv")
    pathlib.Path(files["nul"]).write_bytes(b"a,y\n1,2\n3\x00,4\n")
    return files


BAD_FIT = [
    (["missing.csv", "--target", "y"], "cannot read"),
    (["ok", "--target", "zz"], "no target column 'zz'"),
    (["ok", "--target", "y", "--features", "a,zz"], "no feature column 'zz'"),
    (["text_target", "--target", "y"], "'abc' is not a number"),
    (["mixed_feature", "--target", "y"], "'n/a' is not a number"),
    (["mixed_feature", "--target", "y", "--features", "b"], "'n/a' is not a number"),
    (["nan_cell", "--target", "y"], "'nan' is not finite"),
    (["inf_cell", "--target", "y"], "'-inf' is not finite"),
    (["empty_cell", "--target", "y"], "empty cell"),
    (["one_row", "--target", "y"], "has 1 data row"),
    (["three_rows", "--target", "y"], "too few for 5-fold cross-validation"),
    (["target_twice", "--target", "y"], "named 2 times in the header"),
    (["ok", "--target", "y", "--features", "a,y"], "lists the target column 'y'"),
    (["ok", "--target", "y", "--features", "a,a"], "names the column 'a' twice"),
    (["only_target", "--target", "y"], "no feature columns"),
    (["text_only", "--target", "y"], "no feature columns"),
    (["header_only", "--target", "y"], "no data rows"),
    (["empty", "--target", "y"], "is empty"),
    (["ragged", "--target", "y"], "line 3: 2 cells, but the header has 3 columns"),
    (["latin1", "--target", "y"], "not a UTF-8 text file"),
    (["nul", "--target", "y"], "'3\\x00' is not a number"),
    (["ok"], "needs DATA.csv and --target"),
    (["--target", "y"], "needs DATA.csv and --target"),
    (["ok", "--target", "y", "--demo"], "--demo generates its data"),
    (["ok", "--target", "y", "--n-samples", "9"], "--n-samples apply to --demo only"),
    (["ok", "--target", "y", "--cv", "2", "--n-landmarks", "5"], "--n-landmarks 5 exceeds"),
    (["ok", "--target", "y", "--model", "no/such/dir/m.npz"], "does not exist"),
]


@pytest.mark.parametrize("argv, match", BAD_FIT, ids=[" ".join(a) for a, _ in BAD_FIT])
def test_fit_malformed_input_one_line_error(argv, match, tmp_path, monkeypatch):
    files = _bad_files(tmp_path)
    monkeypatch.chdir(tmp_path)
    argv = [files.get(a, a) for a in argv]
    code, out, err = _run(["convex-fit", *argv])
    lines = err.strip().splitlines()
    assert code == 1, (out, err)
    assert len(lines) == 1 and lines[0].startswith("psdsos: error: "), err
    assert match in lines[0]
    assert "Traceback" not in err


def test_predict_malformed_input_one_line_error(fitted_1d, tmp_path):
    model = str(fitted_1d["model"])
    ok = _write_csv(tmp_path / "ok.csv", ["x"], [["0.5"], ["1.5"]])
    no_x = _write_csv(tmp_path / "nox.csv", ["t"], [["0.5"]])
    bad_x = _write_csv(tmp_path / "badx.csv", ["x", "z"], [["0.5", "1"], ["", "2"]])
    has_col = _write_csv(tmp_path / "has.csv", ["x", "y_predicted"], [["0.5", "1"]])
    not_model = tmp_path / "junk.npz"
    np.savez(not_model, a=np.zeros(2))
    cases = [
        ([str(tmp_path / "missing.npz"), ok], "no psdsos model file"),
        ([str(not_model), ok], "not a psdsos model file"),
        ([model, str(tmp_path / "missing.csv")], "cannot read"),
        ([model, no_x], "no feature column 'x'"),
        ([model, bad_x], "empty cell"),
        ([model, has_col], "already has a column 'y_predicted'"),
        ([model, ok, "--features", "x,x"], "takes 1 features, but 2"),
        ([model, ok, "--out", str(tmp_path / "no" / "p.csv")], "does not exist"),
    ]
    for argv, match in cases:
        code, out, err = _run(["convex-predict", *argv])
        lines = err.strip().splitlines()
        assert code == 1, (argv, out, err)
        assert len(lines) == 1 and lines[0].startswith("psdsos: error: "), (argv, err)
        assert match in lines[0], (argv, lines[0])


def test_predict_rejects_other_model_types(tmp_path):
    from psdsos import PSDRegressor
    from psdsos.datasets import make_bures_geodesic

    t, M = make_bures_geodesic(4, random_state=0)
    PSDRegressor("exponential", sigma=0.5).fit(t, M).save(tmp_path / "psd.npz")
    data = _write_csv(tmp_path / "d.csv", ["x"], [["0.5"]])
    code, _, err = _run(["convex-predict", str(tmp_path / "psd.npz"), data])
    assert code == 1 and "holds a PSDRegressor, not a ConvexRegressor" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["convex-fit", "--demo", "--cv", "1"],
        ["convex-fit", "--demo", "--grid", "huge"],
        ["convex-fit", "--demo", "--rho", "abc"],
        ["convex-fit", "--demo", "--sigma", "1,,2"],
        ["convex-fit", "--demo", "--random-state", "-1"],
        ["convex-fit", "--demo", "--n-landmarks", "0"],
        ["convex-fit", "x.csv", "--target", "y", "--delimiter", "ab"],
        ["convex-predict", "only-one-arg.npz"],
    ],
)
def test_bad_arguments_exit_2(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "usage:" in err and "Traceback" not in err


def test_help_lists_options(capsys):
    assert main(["convex-fit", "--help"]) == 0
    text = capsys.readouterr().out
    for opt in ("--target", "--features", "--cv", "--grid", "--concave", "--solver",
                "--n-landmarks", "--random-state", "--n-jobs", "--model", "--plot", "--demo"):
        assert opt in text


def test_console_entry_point_malformed_input(tmp_path):
    """A real process: exit 1, one stderr line, no traceback."""
    root = pathlib.Path(__file__).resolve().parents[1]
    env = {**os.environ, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    data = _write_csv(tmp_path / "d.csv", ["a", "y"], [["1", "2"], ["x", "3"], ["2", "4"]])
    r = subprocess.run([sys.executable, "-m", "psdsos.cli", "convex-fit", data, "--target", "y"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 1, r.stderr
    assert r.stderr.strip().splitlines() == [
        f"psdsos: error: {data}, line 3, column 'a': 'x' is not a number (a column of numbers "
        "with text in it; missing values are not supported): fix the file or choose the "
        "columns with --features"
    ]


def test_delimiter_tab(tmp_path):
    X, y = _data(20, 1)
    path = tmp_path / "d.tsv"
    body = "".join(f"{float(a)!r}\t{float(b)!r}\n" for a, b in zip(X[:, 0], y, strict=True))
    path.write_text("x\ty\n" + body, encoding="utf-8")
    code, out, err = _run(["convex-fit", str(path), "--target", "y", *FAST, "--delimiter", "tab"])
    assert code == 0, err
    assert _fields(out)["data"].startswith("n = 20 rows, features: x;")


@pytest.mark.parametrize("sep, hint", [(";", "--delimiter ';'"), ("\t", "--delimiter tab"),
                                       ("|", "--delimiter '|'")])
@pytest.mark.parametrize("command", ["convex-fit", "convex-predict"])
def test_other_delimiter_hints_at_the_option(tmp_path, fitted_1d, sep, hint, command):
    # a semicolon CSV (decimal commas, as written by European spreadsheets) read with the
    # default ',' once failed on its first data row without a word about --delimiter
    path = tmp_path / "semi.csv"
    body = "".join(f"{k},5{sep}{k + 1},25\n" for k in range(20))
    path.write_text(f"x{sep}y\n" + body, encoding="utf-8")
    if command == "convex-fit":
        argv = ["convex-fit", str(path), "--target", "y", *FAST]
    else:
        argv = ["convex-predict", str(fitted_1d["model"]), str(path)]
    code, out, err = _run(argv)
    lines = err.strip().splitlines()
    assert code == 1, (out, err)
    assert len(lines) == 1 and lines[0].startswith("psdsos: error: "), err
    assert hint in lines[0] and "looks" in lines[0]
    # with the delimiter given, the same file is read
    if command == "convex-fit" and sep == ";":
        path.write_text(f"x{sep}y\n" + body.replace(",", "."), encoding="utf-8")
        code, out, err = _run(["convex-fit", str(path), "--target", "y", *FAST,
                               "--delimiter", sep])
        assert code == 0, err


# ------------------------------------------------------------------------------------------
# psdsos.plotting.plot_convex_fit
# ------------------------------------------------------------------------------------------


class _Quadratic:
    def predict(self, X):
        return np.sum(np.asarray(X) ** 2, axis=1)


def test_plot_convex_fit_1d_and_2d():
    pytest.importorskip("matplotlib")
    from psdsos.plotting import plot_convex_fit

    rng = np.random.default_rng(0)
    X1 = rng.uniform(-1, 1, (15, 1))
    fig = plot_convex_fit(_Quadratic(), X1[:, 0], X1[:, 0] ** 2, target_name="f",
                          title="t", n_grid=50)
    (ax,) = fig.axes
    (line,) = ax.get_lines()
    x, fx = line.get_data()
    assert len(x) == 50 and x.min() == X1.min() and x.max() == X1.max()
    np.testing.assert_allclose(fx, x**2)
    assert ax.get_ylabel() == "f" and ax.get_xlabel() == "x1"

    X2 = rng.uniform(-1, 1, (15, 2))
    fig = plot_convex_fit(_Quadratic(), X2, np.sum(X2**2, axis=1), feature_names=["u", "v"])
    assert len(fig.axes) == 3  # contours, colour bar, surface
    assert fig.axes[0].get_xlabel() == "u" and fig.axes[0].get_ylabel() == "v"
    assert fig.axes[-1].name == "3d"


def test_plot_convex_fit_bad_input():
    pytest.importorskip("matplotlib")
    from psdsos.plotting import plot_convex_fit

    with pytest.raises(ValueError, match="1 or 2 features; X has 3"):
        plot_convex_fit(_Quadratic(), np.zeros((4, 3)), np.zeros(4))
    with pytest.raises(ValueError, match="y must have shape"):
        plot_convex_fit(_Quadratic(), np.zeros((4, 1)), np.zeros(3))
    with pytest.raises(ValueError, match="NaN"):
        plot_convex_fit(_Quadratic(), np.array([[0.0], [np.nan]]), np.zeros(2))
    with pytest.raises(ValueError, match="feature_names"):
        plot_convex_fit(_Quadratic(), np.zeros((4, 2)), np.zeros(4), feature_names=["a"])
    with pytest.raises(ValueError, match="n_grid"):
        plot_convex_fit(_Quadratic(), np.zeros((4, 1)), np.zeros(4), n_grid=1)
    with pytest.raises(ValueError, match="predict"):
        plot_convex_fit(object(), np.zeros((4, 1)), np.zeros(4))


def test_plot_convex_fit_without_matplotlib(monkeypatch):
    from psdsos.plotting import plot_convex_fit

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r"pip install psdsos\[plot\]"):
        plot_convex_fit(_Quadratic(), np.zeros((4, 1)), np.zeros(4))


def test_fit_plot_without_matplotlib_fails_before_fitting(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    data = _write_csv(tmp_path / "d.csv", ["x", "y"], [["1", "2"], ["2", "3"], ["3", "5"]])
    code, out, err = _run(["convex-fit", data, "--target", "y", "--cv", "3", "--plot",
                           str(tmp_path / "p.png")])
    assert code == 1 and out == ""
    assert err.strip() == "psdsos: error: --plot needs matplotlib: pip install psdsos[plot]"


# ------------------------------------------------------------------------------------------
# raw units: standardization, relative deficit, --strict
# ------------------------------------------------------------------------------------------
def _spending_table(path, n=60, seed=0):
    """Monthly spending against income in [400, 5000]: a convex curve plus noise (sd 20)."""
    rng = np.random.default_rng(seed)
    income = rng.uniform(400.0, 5000.0, n)
    truth = 300.0 + 0.05 * income + 2e-5 * (income - 400.0) ** 2
    spending = truth + 20.0 * rng.standard_normal(n)
    rows = [[f"{a:.2f}", f"{b:.2f}"] for a, b in zip(income, spending, strict=True)]
    return _write_csv(path, ["income", "spending"], rows), income, truth


def test_fit_raw_units_small_relative_deficit_and_sensible_fit(tmp_path):
    """Income in [400, 5000]: standardized inside, results in the user's units."""
    data, income, truth = _spending_table(tmp_path / "spend.csv")
    code, out, err = _run(["convex-fit", data, "--target", "spending", "--cv", "2",
                           "--rho", "1e-5", "--lam2", "1e-5", "--sigma", "1", "--quiet",
                           "--strict", "--model", str(tmp_path / "m.npz")])
    assert code == 0, err
    assert "warning" not in err
    f = _fields(out)
    rel = float(f["convexity deficit"].split()[0])
    assert 0.0 <= rel <= RELATIVE_DEFICIT_TOL
    assert f["bandwidth"].startswith("0.707107 standardized units")
    assert 0.6 * 400 <= float(f["CV error (MSE)"]) <= 2.0 * 400  # noise variance 400
    # predictions in the user's units, close to the true curve (noise sd 20)
    grid = np.linspace(450.0, 4950.0, 10)
    new = _write_csv(tmp_path / "new.csv", ["income"], [[repr(float(v))] for v in grid])
    code, stdout, err = _run(["convex-predict", str(tmp_path / "m.npz"), new])
    assert code == 0, err
    pred = np.array([float(r[1]) for r in list(csv.reader(io.StringIO(stdout)))[1:]])
    true = 300.0 + 0.05 * grid + 2e-5 * (grid - 400.0) ** 2
    assert np.max(np.abs(pred - true)) < 30.0
    # second differences of the predictions in the user's units: convex
    fine = np.linspace(450.0, 4950.0, 200)
    new = _write_csv(tmp_path / "fine.csv", ["income"], [[repr(float(v))] for v in fine])
    _, stdout, _ = _run(["convex-predict", str(tmp_path / "m.npz"), new])
    p = np.array([float(r[1]) for r in list(csv.reader(io.StringIO(stdout)))[1:]])
    d2 = np.diff(p, 2) / (fine[1] - fine[0]) ** 2
    assert d2.min() >= -0.05 * 4e-5  # true curvature 2 * 2e-5


def test_fit_same_in_any_units(tmp_path):
    """Scaling the columns (dollars -> thousands of cents) changes the reports only by the
    units: the selection and the relative deficit are the same."""
    data, income, _ = _spending_table(tmp_path / "a.csv", n=24)
    with open(data, newline="") as fh:
        rows = list(csv.reader(fh))[1:]
    scaled = _write_csv(tmp_path / "b.csv", ["income", "spending"],
                        [[repr(float(a) * 1e-3), repr(float(b) * 1e5)] for a, b in rows])
    argv = ["--target", "spending", "--cv", "2", "--rho", "1e-3,1e-5", "--lam2", "1e-3",
            "--sigma", "1", "--solver", "primal", "--quiet"]
    fa = _fields(_run(["convex-fit", data, *argv])[1])
    fb = _fields(_run(["convex-fit", scaled, *argv])[1])
    assert fa["selected"] == fb["selected"]
    assert float(fb["CV error (MSE)"]) == pytest.approx(1e10 * float(fa["CV error (MSE)"]),
                                                       rel=1e-4)
    assert float(fb["convexity deficit"].split()[0]) == pytest.approx(
        float(fa["convexity deficit"].split()[0]), rel=1e-3, abs=1e-6)


def test_large_relative_deficit_warns_or_fails_with_strict(tmp_path):
    """Nystrom rank 2 on a wiggly target: far from convex between the constraint points."""
    rng = np.random.default_rng(1)
    income = rng.uniform(400.0, 5000.0, 24)
    y = 50 * np.sin(income / 300.0) + 1e-5 * (income - 400.0) ** 2 + rng.normal(0, 5, 24)
    data = _write_csv(tmp_path / "w.csv", ["income", "spending"],
                      [[repr(float(a)), repr(float(b))] for a, b in zip(income, y, strict=True)])
    argv = ["convex-fit", data, "--target", "spending", "--cv", "2", "--rho", "1e-5",
            "--lam2", "1e-5", "--sigma", "1", "--n-landmarks", "2", "--quiet"]
    code, out, err = _run(argv)
    assert code == 0
    rel = float(_fields(out)["convexity deficit"].split()[0])
    assert rel > RELATIVE_DEFICIT_TOL
    assert "psdsos: warning: the fit is not convex" in err and "--n-landmarks exact" in err
    code, out, err = _run([*argv, "--strict"])
    assert code == 1
    assert "psdsos: error: the fit is not convex" in err and "--strict" in err


def test_constant_feature_column_is_refused(tmp_path):
    data = _write_csv(tmp_path / "c.csv", ["x", "k", "y"],
                      [[repr(float(i)), "3.0", repr(float(i * i))] for i in range(8)])
    code, _, err = _run(["convex-fit", data, "--target", "y", *FAST])
    assert code == 1 and "feature column 'k' is constant" in err


def test_predict_refuses_invalid_scaling_metadata(fitted_1d, tmp_path):
    from psdsos import load

    model = load(fitted_1d["model"])
    model.save(tmp_path / "bad.npz", metadata={
        COLUMNS_KEY: {"features": ["x"], "target": "y"},
        SCALING_KEY: {"x_mean": [0.0], "x_scale": [0.0], "y_mean": 0.0, "y_scale": 1.0}})
    code, _, err = _run(["convex-predict", str(tmp_path / "bad.npz"), fitted_1d["data"]])
    assert code == 1 and SCALING_KEY in err


def test_deficit_advice_by_size():
    # exact features (every row a centre, an n x n kernel) are advised only for small data
    from psdsos.cli import _deficit_advice
    from psdsos.estimators._convex import AUTO_TRAIN_CENTERS

    small, large = _deficit_advice(AUTO_TRAIN_CENTERS), _deficit_advice(AUTO_TRAIN_CENTERS + 1)
    assert small.startswith("try --n-landmarks exact") and "--sigma" in small
    assert large.startswith("try larger --sigma") and "n x n kernel" in large


def _pretend_uncertified(monkeypatch, first_only):
    """ConvexRegressor fits whose certificate reads 'sampled' (the first refit only, or all);
    returns the list of (sigma, rho, lam2) refitted with a certificate, in order."""
    import dataclasses

    from psdsos import ConvexRegressor

    fit0 = ConvexRegressor.fit
    order = []

    def fit(self, X, y, sample_weight=None):
        fit0(self, X, y, sample_weight=sample_weight)
        if type(self) is ConvexRegressor:  # the refits (the CV fits are another class)
            order.append((self.sigma, self.rho, self.lam2))
            if len(order) == 1 or not first_only:
                self.certificate_ = {k: dataclasses.replace(c, status="sampled")
                                     for k, c in self.certificate_.items()}
        return self

    monkeypatch.setattr(ConvexRegressor, "fit", fit)
    return order


def _selected(out):
    line = next(ln for ln in out.splitlines() if ln.startswith("selected: "))
    return {k: float(v.split()[0]) for k, v in
            (part.split(" = ") for part in line.removeprefix("selected: ").split(", "))}


@pytest.mark.parametrize("first_only", [True, False])
def test_refits_in_cv_order_until_certified(tmp_path, monkeypatch, first_only):
    """The candidates are refitted in the order of their CV error until one is certified
    convex (ConvexRegressorCV's rule); none: the best by CV, with a line saying so."""
    X, y = _data(30, 1)
    data = _write_csv(tmp_path / "d.csv", ["x", "y"],
                      [[repr(float(a)), repr(float(b))] for a, b in zip(X[:, 0], y, strict=True)])
    argv = ["convex-fit", data, "--target", "y", "--cv", "2", "--rho", "1e-3,1e-5",
            "--lam2", "1e-3", "--sigma", "1,2", "--quiet", "--random-state", "0"]
    code, base, _ = _run(argv + ["--max-refits", "1"])  # the best by CV, certified or not
    assert code == 0 and "refits:" not in base
    order = _pretend_uncertified(monkeypatch, first_only)
    code, out, err = _run(argv)
    assert code == 0
    cv_line = next(ln for ln in out.splitlines() if ln.startswith("CV error"))
    if first_only:
        assert len(order) == 2 and order[0] != order[1]
        assert ("refits: 2 (in CV order); kept number 2 by CV, the first whose refit is "
                "certified convex") in out
        assert _selected(out) != _selected(base)
        assert cv_line != next(ln for ln in base.splitlines() if ln.startswith("CV error"))
    else:
        assert len(order) == 3 and len(set(order)) == 3  # --max-refits 3 (default)
        assert "refits: 3 (in CV order); none is certified convex: kept the best by CV" in out
        assert _selected(out) == _selected(base)


def test_max_refits_must_be_positive():
    code, _, err = _run(["convex-fit", "--demo", "--max-refits", "0"])
    assert code == 2 and "--max-refits: expected an integer >= 1, got 0" in err
