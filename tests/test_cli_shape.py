"""Tests for ``psdsos shape-fit`` and for ``convex-predict`` / ``predict`` on its model files.

The fits run on a 60-row table with two features in raw units (income in thousands, age in
years) with the dual solver and one candidate, so each takes a second or two.  The branch
and bound of the certificates may leave every status "sampled" (then the estimator warns);
the tests assert on the structure, the units and the exit codes, whatever the status.
"""

import contextlib
import csv
import io
import re
import warnings

import numpy as np
import pytest

from psdsos.cli import COLUMNS_KEY, SCALING_KEY, main

#: One candidate, two folds, the dual solver, no progress bar.
FAST = ["--cv", "2", "--rho", "1e-3", "--lam2", "1e-3", "--sigma", "1", "--quiet"]
#: The table's columns: an id, the target in the middle, two features.
HEADER = ["id", "income", "spend", "age"]


def _run(argv):
    """main(argv) with stdout and stderr captured: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _table(path, n=60, seed=0, income_unit=1.0):
    """spend = 50 log(income) + 0.3 age + noise: increasing in both, concave in income."""
    rng = np.random.default_rng(seed)
    income = rng.uniform(10.0, 100.0, n)
    age = rng.uniform(20.0, 70.0, n)
    spend = 50.0 * np.log(income) + 0.3 * age + rng.normal(0.0, 3.0, n)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(HEADER)
        for i in range(n):
            w.writerow([f"s{i}", repr(float(income[i] * income_unit)), repr(float(spend[i])),
                        repr(float(age[i]))])
    return str(path), np.column_stack([income * income_unit, age]), spend


def _certificate_lines(text):
    """{name: (status, bound, relative, correction)} of the printed certificates."""
    pat = re.compile(r"^  (\S+)\s+(certified|sampled)\s+bound = (\S+)\s+relative = (\S+)\s+"
                     r"correction = (\S+)$")
    out = {}
    for line in text.splitlines():
        m = pat.match(line)
        if m:
            out[m.group(1)] = (m.group(2), *(float(m.group(k)) for k in (3, 4, 5)))
    return out


SHAPE = ["--increasing", "income,age", "--concave", "income", "--lower", "0"]


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("shape")
    data, X, y = _table(tmp / "train.csv")
    model = tmp / "model.npz"
    code, out, err = _run(["shape-fit", data, "--target", "spend", *SHAPE, *FAST,
                           "--model", str(model)])
    assert code == 0, err
    return {"tmp": tmp, "data": data, "X": X, "y": y, "model": model, "out": out, "err": err}


def _reference(fitted, **params):
    """The estimator fitted in-process on the data standardized with the saved scaling
    (checked against numpy's mean and standard deviation), as the command fits it."""
    from psdsos import ShapeConstrainedRegressor
    from psdsos.estimators import UncertifiedShapeWarning
    from psdsos.model_selection import relative_sigmas
    from psdsos.sos import load_npz

    _, meta = load_npz(fitted["model"])
    sc = meta[SCALING_KEY]
    X, y = fitted["X"], fitted["y"]
    np.testing.assert_allclose(sc["x_mean"], X.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(sc["x_scale"], X.std(axis=0), rtol=1e-12)
    np.testing.assert_allclose([sc["y_mean"], sc["y_scale"]], [y.mean(), y.std()], rtol=1e-12)
    xm, xs = np.asarray(sc["x_mean"]), np.asarray(sc["x_scale"])
    Xs = (X - xm) / xs
    ys = (y - sc["y_mean"]) / sc["y_scale"]
    est = ShapeConstrainedRegressor(
        increasing=[0, 1], concave=[0], lower=(0.0 - sc["y_mean"]) / sc["y_scale"], lam1=0.0,
        rho=1e-3, lam2=1e-3, sigma=relative_sigmas([1.0], Xs)[0], random_state=0, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UncertifiedShapeWarning)
        est.fit(Xs, ys)
    return est, xm, xs, sc["y_mean"], sc["y_scale"]


# ------------------------------------------------------------------------------------------
def test_report_names_columns_and_prints_one_line_per_constraint(fitted):
    out = fitted["out"]
    assert "features: income, age; target: spend" in out
    assert "ignored non-numeric columns: id" in out
    assert "increasing[income,age], concave[income], values >= 0" in out
    for key in ("selected:", "CV error (MSE):", "training error (MSE):", "exchange rounds:"):
        assert key in out
    certs = _certificate_lines(out)
    assert list(certs) == ["increasing[income]", "increasing[age]", "concave[income]", "lower"]
    statuses = {s for s, *_ in certs.values()}
    assert statuses <= {"certified", "sampled"}
    if "sampled" in statuses:  # said on stderr, exit code 0 without --strict
        assert "not proved on the box" in fitted["err"] and "--max-cells" in fitted["err"]
    assert "Traceback" not in fitted["err"]


def test_certificates_in_the_columns_units(fitted):
    """Printed bound = the estimator's (standardized) bound x s_y / s_p^order; relative and
    status unchanged; and a lower bound of the raw fit's derivative / values at the rows."""
    est, xm, xs, ym, sy = _reference(fitted)
    certs = _certificate_lines(fitted["out"])
    factor = {"increasing[0]": ("increasing[income]", sy / xs[0]),
              "increasing[1]": ("increasing[age]", sy / xs[1]),
              "concave[0]": ("concave[income]", sy / xs[0] ** 2),
              "lower": ("lower", sy)}
    assert set(est.certificate_) == set(factor)
    for key, (name, f) in factor.items():
        ref = est.certificate_[key]
        status, bound, rel, corr = certs[name]
        assert status == ref.status
        assert bound == pytest.approx(ref.bound * f, rel=1e-3, abs=1e-12)
        assert rel == pytest.approx(ref.relative, rel=1e-3, abs=1e-12)
        assert corr == pytest.approx(ref.correction * f, rel=1e-3, abs=1e-12)
    # independent check of the units: central differences of the raw fit in the raw units
    X = fitted["X"]

    def raw(Z):
        return ym + sy * est.predict((Z - xm) / xs, raw=True)

    for j, name in ((0, "increasing[income]"), (1, "increasing[age]")):
        h = 1e-4 * xs[j]
        E = np.zeros_like(X)
        E[:, j] = h
        slope = (raw(X + E) - raw(X - E)) / (2 * h)
        assert certs[name][1] <= slope.min() + 1e-6 * np.abs(slope).max()
    h = 1e-3 * xs[0]
    E = np.zeros_like(X)
    E[:, 0] = h
    curv = -(raw(X + E) - 2 * raw(X) + raw(X - E)) / h**2  # -d2f/dx2 >= bound
    assert certs["concave[income]"][1] <= curv.min() + 1e-4 * np.abs(curv).max()
    assert certs["lower"][1] <= raw(X).min() - 0.0 + 1e-9


def test_same_certificates_in_any_units(fitted, tmp_path):
    """Income in dollars instead of thousands: the same standardized problem; the slope
    bound in income is 1000 times smaller, the curvature bound 1e6 times, the rest equal."""
    data, _, _ = _table(tmp_path / "dollars.csv", income_unit=1000.0)
    code, out, err = _run(["shape-fit", data, "--target", "spend", *SHAPE, *FAST])
    assert code == 0, err
    a, b = _certificate_lines(fitted["out"]), _certificate_lines(out)
    scale = {"increasing[income]": 1e3, "concave[income]": 1e6}
    for name, (status, bound, rel, _) in a.items():
        s = scale.get(name, 1.0)
        assert b[name][0] == status
        scale_raw = abs(bound / rel)  # the constraint function's scale, user's units
        assert b[name][1] * s == pytest.approx(bound, abs=1e-3 * scale_raw)
        assert b[name][2] == pytest.approx(rel, abs=1e-3)


@pytest.mark.parametrize("command, raw", [("convex-predict", False), ("predict", False),
                                          ("predict", True)])
def test_model_round_trip_through_predict(fitted, command, raw):
    """Predictions in raw units equal the in-process estimator's on the same standardized
    data (the certified-shape predictor, or the raw fit with --raw), and the file keeps the
    columns and certificates."""
    import psdsos
    from psdsos.sos import load_npz

    out_csv = fitted["tmp"] / f"pred-{command}-{raw}.csv"
    code, out, err = _run([command, str(fitted["model"]), fitted["data"], "--out",
                           str(out_csv), *(["--raw"] if raw else [])])
    assert code == 0, err
    assert f"psdsos {command}: 60 rows" in out and "error (MSE) against column 'spend'" in out
    with open(out_csv, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == [*HEADER, "spend_predicted"]
    pred = np.array([float(r[-1]) for r in rows[1:]])
    est, xm, xs, ym, sy = _reference(fitted)
    ref = ym + sy * est.predict((fitted["X"] - xm) / xs, raw=raw)
    np.testing.assert_allclose(pred, ref, rtol=1e-10, atol=1e-10 * sy)
    model = psdsos.load(fitted["model"])
    assert isinstance(model, psdsos.ShapeConstrainedRegressor)
    assert set(model.certificate_) == set(est.certificate_)
    _, meta = load_npz(fitted["model"])
    assert meta[COLUMNS_KEY] == {"features": ["income", "age"], "target": "spend"}


def test_raw_predictions_need_a_shape_model(tmp_path):
    from psdsos import ConvexRegressor

    X = np.linspace(0.0, 1.0, 8)[:, None]
    ConvexRegressor(n_landmarks=None, max_iter=20).fit(X, X[:, 0] ** 2).save(tmp_path / "c")
    data = tmp_path / "d.csv"
    data.write_text("x\n0.5\n", encoding="utf-8")
    code, _, err = _run(["predict", str(tmp_path / "c.npz"), str(data), "--features", "x",
                         "--raw"])
    assert code == 1 and "--raw applies to models saved by shape-fit" in err


def test_strict_exits_1_when_a_constraint_is_only_sampled(tmp_path):
    """One cell for the branch and bound: no proof (status "sampled"), exit 1 after the
    whole report; without --strict the same run warns and exits 0."""
    data, _, _ = _table(tmp_path / "t.csv")
    # the Matern 5/2 kernel's Hessian bound needs far more than one cell
    argv = ["shape-fit", data, "--target", "spend", "--concave", "income", *FAST,
            "--kernel", "matern52", "--max-cells", "1"]
    code, out, err = _run([*argv, "--strict"])
    status = _certificate_lines(out)["concave[income]"][0]
    assert status == "sampled"
    assert code == 1
    assert "concave[income]" in err and "(--strict)" in err and "Traceback" not in err
    assert "exchange rounds:" in out  # the report is printed before the exit code
    code, out2, err = _run(argv)
    timing = re.compile(r"in \d+\.\d+ s")  # the CV's wall time differs between runs
    assert code == 0 and timing.sub("", out2) == timing.sub("", out)
    assert err.startswith("psdsos: warning: the constraints concave[income] are not proved")


def test_strict_exits_0_when_every_constraint_is_certified(tmp_path):
    """Gaussian kernel: the branch and bound proves every constraint; --strict passes,
    nothing on stderr."""
    data, _, _ = _table(tmp_path / "t.csv")
    code, out, err = _run(["shape-fit", data, "--target", "spend", "--increasing", "income",
                           "--upper", "400", *FAST, "--strict"])
    assert code == 0, err
    assert {s for s, *_ in _certificate_lines(out).values()} == {"certified"}
    assert err == ""


def test_unknown_column_exit_2(fitted):
    for option, value in (("--increasing", "incme"), ("--concave", "age,wage"),
                          ("--decreasing", "spend")):  # the target is no feature
        code, out, err = _run(["shape-fit", fitted["data"], "--target", "spend",
                               option, value])
        bad = value.split(",")[-1]
        assert code == 2 and out == ""
        assert f"{option}: {bad!r} is not a feature column" in err
        assert "'income', 'age'" in err and "Traceback" not in err


def test_missing_target_exit_2(fitted):
    code, out, err = _run(["shape-fit", fitted["data"], "--increasing", "income"])
    assert code == 2 and "needs --target COLUMN" in err and out == ""


@pytest.mark.parametrize("argv, match", [
    (["--increasing", "income", "--decreasing", "age,income"],
     "column 'income' is both --increasing and --decreasing"),
    (["--convex", "--concave", "age"], "column 'age' is both --convex and --concave"),
    (["--lower", "5", "--upper", "1"], "--lower must be < --upper"),
    ([], "no shape constraint"),
    (["--increasing", "age,age"], "--increasing names the column 'age' twice"),
])
def test_conflicting_or_missing_constraints_exit_2(fitted, argv, match):
    code, out, err = _run(["shape-fit", fitted["data"], "--target", "spend", *argv])
    assert code == 2 and out == ""
    assert err.startswith("psdsos: error: ") and match in err and "Traceback" not in err


@pytest.mark.parametrize("option, value, says", [
    ("--lower", "nan", "expected a finite number"),
    ("--max-cells", "0", "expected an integer >= 1"),
    ("--certify-tol", "0", "expected a finite number > 0"),
    ("--increasing", "a,,b", "without empty entries"),
])
def test_malformed_options_are_usage_errors(option, value, says):
    code, out, err = _run(["shape-fit", "x.csv", "--target", "y", option, value])
    assert (code, out) == (2, "")
    assert err.startswith("usage: psdsos shape-fit") and says in err and option in err


def test_data_file_is_required():
    code, _, err = _run(["shape-fit", "--target", "y", "--lower", "0"])
    assert code == 2 and "the following arguments are required: DATA.csv" in err


def test_help_lists_options(capsys):
    assert main(["shape-fit", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for opt in ("--target", "--features", "--increasing", "--decreasing", "--convex",
                "--concave", "--lower", "--upper", "--strict", "--certify-tol", "--max-cells",
                "--kernel", "--sigma", "--rho", "--lam2", "--solver", "--tol", "--max-iter",
                "--random-state", "--cv", "--grid", "--model"):
        assert opt in text
    assert "positive scaling" in text and "target's units" in text
    assert main(["predict", "--help"]) == 0
    assert "shape-fit --model" in capsys.readouterr().out


# ---- the unit conversion of a Hessian block and convex-fit's certificate ---------------------
def test_hessian_block_bound_is_a_valid_lower_bound_in_raw_units():
    """lambda_min(s_y D^-1 H D^-1) >= the converted lambda_min(H) (brute force over random
    symmetric H and scales D), with equality for equal scales."""
    from psdsos.cli._fit_common import _unit_factor
    from psdsos.cli._scaling import _Scaling

    rng = np.random.default_rng(0)
    for trial in range(200):
        p = int(rng.integers(1, 4))
        s = rng.uniform(0.1, 10.0, p) if trial % 4 else np.full(p, rng.uniform(0.1, 10.0))
        sc = _Scaling(np.zeros(p), s, 0.0, rng.uniform(0.5, 3.0))
        A = rng.standard_normal((p, p))
        H = A + A.T + rng.uniform(-2.0, 2.0) * np.eye(p)
        lam = np.linalg.eigvalsh(H)[0]
        f, exact = _unit_factor("convex", list(range(p)), lam, sc)
        Dinv = np.diag(1.0 / s)
        true = np.linalg.eigvalsh(sc.y_scale * Dinv @ H @ Dinv)[0]
        assert lam * f <= true + 1e-9 * abs(true)
        if exact:
            assert lam * f == pytest.approx(true, rel=1e-9, abs=1e-12)
        assert exact == (np.ptp(s) == 0)


def test_convex_fit_prints_its_certificate(tmp_path, monkeypatch):
    """convex-fit prints ConvexRegressor's certificate: one line 'convex[x]', proved on this
    smooth convex curve; a stubbed record is converted by s_y / s_x^2."""
    from psdsos.certify import _convexity as _convex_certify
    from psdsos.estimators import ShapeCertificate

    rng = np.random.default_rng(1)
    x = rng.uniform(0.0, 50.0, 24)
    y = (x / 10.0) ** 2 + rng.normal(0.0, 0.5, 24)
    data = tmp_path / "c.csv"
    with open(data, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([["x", "y"], *[[repr(float(a)), repr(float(b))]
                                                for a, b in zip(x, y, strict=True)]])
    argv = ["convex-fit", str(data), "--target", "y", *FAST, "--max-iter", "50"]
    code, out, err = _run(argv)
    assert code == 0, err
    assert _certificate_lines(out)["convex[x]"][0] == "certified"
    cert = ShapeCertificate(bound=0.25, status="sampled", relative=0.1, sampled_min=0.25)

    def stub(est):
        est.certificate_ = {"convex[0]": cert}

    monkeypatch.setattr(_convex_certify, "convexity_certificate", stub)
    code, out, err = _run(argv)
    assert code == 0, err
    status, bound, rel, corr = _certificate_lines(out)["convex[x]"]
    assert (status, rel, corr) == ("sampled", 0.1, 0.0)
    assert bound == pytest.approx(0.25 * y.std() / x.std() ** 2, rel=1e-3)


def test_n_landmarks_expands_the_fit_on_that_many_centers(tmp_path):
    import psdsos

    data, _, _ = _table(tmp_path / "t.csv")
    argv = ["shape-fit", data, "--target", "spend", "--increasing", "income", *FAST]
    code, out, err = _run([*argv, "--n-landmarks", "10", "--model", str(tmp_path / "m.npz")])
    assert code == 0, err
    assert "centers: 10 greedy landmarks" in out
    assert psdsos.load(tmp_path / "m.npz").X_fit_.shape == (10, 2)
    code, _, err = _run([*argv, "--n-landmarks", "31"])
    assert code == 1 and "exceeds the 30 rows of the smallest 2-fold training set" in err


def test_refits_in_cv_order_until_every_constraint_is_certified(tmp_path, monkeypatch):
    """As convex-fit: the best by CV whose certificates are not all proved is passed over
    for the next candidate in CV order."""
    import dataclasses

    from psdsos import ShapeConstrainedRegressor

    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(0.0, 1.0, 30))
    y = np.sqrt(x) + 0.05 * rng.standard_normal(30)
    data = tmp_path / "d.csv"
    data.write_text("x,y\n" + "\n".join(f"{a!r},{b!r}" for a, b in
                                          zip(x.tolist(), y.tolist(), strict=True)) + "\n")
    fit0 = ShapeConstrainedRegressor.fit
    order = []

    def fit(self, X, y, sample_weight=None):
        fit0(self, X, y, sample_weight=sample_weight)
        if self.certify:  # the refits (the CV fits have certify=False)
            order.append((self.sigma, self.rho))
            if len(order) == 1:
                self.certificate_ = {k: dataclasses.replace(c, status="sampled")
                                     for k, c in self.certificate_.items()}
        return self

    monkeypatch.setattr(ShapeConstrainedRegressor, "fit", fit)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["shape-fit", str(data), "--target", "y", "--increasing", "x",
                     "--cv", "2", "--rho", "1e-3,1e-5", "--sigma", "1", "--quiet"])
    assert code == 0, err.getvalue()
    assert len(order) == 2 and order[0] != order[1]
    assert ("refits: 2 (in CV order); kept number 2 by CV, the first whose refit is "
            "certified (every constraint)") in out.getvalue()


def test_cv_fits_use_the_estimators_constraint_points(tmp_path, monkeypatch):
    """shape-fit's CV fits impose the shapes where ShapeConstrainedRegressorCV's do (the
    refit's 64 points in two features)."""
    from psdsos import ShapeConstrainedRegressor
    from psdsos.estimators._shape_cv import default_cv_points

    rng = np.random.default_rng(1)
    X = rng.uniform(0.1, 1.0, (40, 2))
    y = np.sqrt(X).sum(axis=1) + 0.05 * rng.standard_normal(40)
    data = tmp_path / "d.csv"
    data.write_text("a,b,y\n" + "\n".join(f"{r[0]!r},{r[1]!r},{t!r}" for r, t in
                                           zip(X.tolist(), y.tolist(), strict=True)) + "\n")
    fit0 = ShapeConstrainedRegressor.fit
    seen = set()

    def fit(self, X, y, sample_weight=None):
        if not self.certify:
            seen.add(self.constraint_points)
        return fit0(self, X, y, sample_weight=sample_weight)

    monkeypatch.setattr(ShapeConstrainedRegressor, "fit", fit)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["shape-fit", str(data), "--target", "y", "--increasing", "a,b",
                     "--cv", "2", "--rho", "1e-3", "--sigma", "1", "--quiet"])
    assert code == 0, err.getvalue()
    assert seen == {default_cv_points(2)} == {64}
