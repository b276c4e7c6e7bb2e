"""Discrete SELF outputs used as scikit-learn classifiers: labels of any hashable type
(``classes_``), classifier tags and stratified folds, the score of each space, folds that
miss a label, pickling after a CVXPY decode, memory of the structured decoders, the HiGHS
banner and the Bures solver tolerance.

References: sklearn's SVC on the same folds (iris, wine), sklearn's accuracy_score, the
integer-coded fit of the same data, the dense eq. 9 formula theta = -(V g + s b) built from
``affine_decomposition`` and ``embed`` (small k), brute force over all labels.
"""

from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import is_classifier
from sklearn.datasets import load_iris, load_wine
from sklearn.metrics import accuracy_score
from sklearn.model_selection import (
    KFold,
    StratifiedKFold,
    cross_val_score,
    cross_validate,
)
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

import psdsos
import psdsos.structured as structured
from psdsos.structured import (
    KRLSEstimator,
    MulticlassSpace,
    MultilabelSpace,
    OrdinalSpace,
    RankingSpace,
    SELFEstimator,
)


def blobs(rng, n=60, k=3, p=2):
    """k well-separated Gaussian blobs in R^p; integer labels 0..k-1."""
    y = np.arange(n) % k
    centers = 3.0 * rng.normal(size=(k, p))
    return centers[y] + 0.5 * rng.normal(size=(n, p)), y


# --------------------------------------------------------------------------- labels


def test_string_labels_multiclass_match_integer_codes(rng):
    X, y = blobs(rng)
    names = np.array(["setosa", "alpha", "zeta"])
    ys = names[y]
    est = SELFEstimator(sigma=1.0, output="multiclass").fit(X, ys)
    ref = SELFEstimator(sigma=1.0, output="multiclass").fit(X, y)
    np.testing.assert_array_equal(est.classes_, np.sort(names))
    Xt = rng.normal(size=(25, 2)) * 3
    # the string fit decides like the integer fit, up to the relabelling of the classes
    codes = np.searchsorted(np.sort(names), names)  # integer label -> position in classes_
    np.testing.assert_array_equal(est.predict(Xt), np.sort(names)[codes[ref.predict(Xt)]])
    assert est.predict(Xt).dtype.kind == "U"
    assert set(est.predict(Xt)) <= set(names)


def test_labels_of_any_value_do_not_allocate_per_value(rng):
    X, y = blobs(rng, n=40, k=2)
    big = np.where(y == 0, 0.0, 1e9)  # a label of 1e9 once tried np.eye(1e9 + 1)
    tracemalloc.start()
    est = SELFEstimator(sigma=1.0, output="multiclass").fit(X, big)
    pred = est.predict(X)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 5 * 2**20
    np.testing.assert_array_equal(est.classes_, [0.0, 1e9])
    assert est.output_space_.k_ == 2
    assert set(pred) <= {0.0, 1e9}
    np.testing.assert_array_equal(pred == 1e9, SELFEstimator(sigma=1.0, output="multiclass")
                                  .fit(X, y).predict(X) == 1)


def test_ordinal_order_sorted_or_given(rng):
    X = np.linspace(0, 1, 30)[:, None]
    pos = np.minimum((3 * X[:, 0]).astype(int), 2)  # 0, 1, 2 along the line
    order = np.array(["low", "mid", "high"])
    ys = order[pos]
    # given order: the positions decide as the integer labels do
    est = SELFEstimator(sigma=0.2, output=OrdinalSpace(classes=order)).fit(X, ys)
    ref = SELFEstimator(sigma=0.2, output="ordinal").fit(X, pos)
    np.testing.assert_array_equal(est.classes_, order)
    Xt = np.linspace(-0.2, 1.2, 41)[:, None]
    np.testing.assert_array_equal(est.predict(Xt), order[ref.predict(Xt)])
    # default: sorted labels ("high" < "low" < "mid" alphabetically), documented
    alpha = SELFEstimator(sigma=0.2, output="ordinal").fit(X, ys)
    np.testing.assert_array_equal(alpha.classes_, ["high", "low", "mid"])
    assert alpha.output_space_.loss(["high"], ["mid"])[0] == 2.0
    assert est.output_space_.loss(["high"], ["mid"])[0] == 1.0
    # score: minus the mean absolute loss in positions
    assert est.score(Xt[:3], ["low"] * 3) == -np.mean(
        np.abs(np.searchsorted([0, 1, 2], ref.predict(Xt[:3]))))


def test_krls_ordinal_with_labels(rng):
    X = np.linspace(0, 1, 30)[:, None]
    pos = np.minimum((3 * X[:, 0]).astype(int), 2)
    order = np.array(["low", "mid", "high"])
    est = KRLSEstimator(sigma=0.2, output=OrdinalSpace(classes=order)).fit(X, order[pos])
    ref = KRLSEstimator(sigma=0.2, output="ordinal").fit(X, pos)
    Xt = np.linspace(-0.2, 1.2, 41)[:, None]
    np.testing.assert_array_equal(est.predict(Xt), order[ref.predict(Xt)])


@pytest.mark.parametrize("cls", [MulticlassSpace, OrdinalSpace])
def test_bad_labels_raise_naming_the_argument(cls):
    with pytest.raises(ValueError, match="y must hold .*continuous"):
        SELFEstimator(output=cls.name).fit([[0.0], [1.0], [2.0]], [0.5, 1.5, 2.5])
    with pytest.raises(ValueError, match="missing labels"):
        cls().fit(np.array(["a", None, "b"], dtype=object))
    with pytest.raises(ValueError, match="classes must hold distinct"):
        cls(classes=["a", "b", "a"]).fit(["a", "b"])
    with pytest.raises(ValueError, match="k = 3 does not match"):
        cls(k=3, classes=["a", "b"]).fit(["a", "b"])
    with pytest.raises(ValueError, match="not in classes"):
        cls(classes=["a", "b"]).fit(["a", "c"])
    with pytest.raises(ValueError, match="comparable"):
        cls().fit(np.array(["a", 1, "b"], dtype=object))


def test_labels_unseen_in_training_are_scored():
    space = MulticlassSpace().fit(["a", "b", "b"])
    np.testing.assert_array_equal(space.loss(["c", "a"], ["a", "a"]), [1.0, 0.0])
    assert space.score(["c", "a"], ["a", "a"]) == 0.5
    with pytest.raises(ValueError, match="not seen in training"):
        space.encode(["c"])
    with pytest.raises(ValueError, match="Y_true holds labels of another type"):
        space.loss([1, 2], ["a", "b"])
    with pytest.raises(ValueError, match="Y_true holds labels of another type"):
        OrdinalSpace().fit(["a", "b"]).loss([1, 2], ["a", "b"])
    # the same strings as an object array (a pandas column) are the same labels
    np.testing.assert_array_equal(space.loss(np.array(["c", "a"], dtype=object), ["a", "a"]),
                                  [1.0, 0.0])
    ordinal = OrdinalSpace().fit([0, 2, 4])
    # an unseen label sits half-way between its neighbours in the sorted order
    np.testing.assert_allclose(ordinal.loss([1, 3, 5, -1], [0, 0, 4, 0]), [0.5, 1.5, 0.5, 0.5])


def test_classes_config_round_trip_and_save(rng, tmp_path):
    X, y = blobs(rng)
    names = np.array(["b", "a", "c"])
    space = OrdinalSpace(classes=names)
    assert OrdinalSpace.from_config(space.to_config()).to_config() == space.to_config()
    est = SELFEstimator(sigma=1.0, output=space).fit(X, names[y])
    est.save(tmp_path / "m.npz")
    loaded = psdsos.load(tmp_path / "m.npz")
    np.testing.assert_array_equal(loaded.classes_, names)
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    multi = SELFEstimator(sigma=1.0, output="multiclass").fit(X, names[y])
    multi.save(tmp_path / "c.npz")
    np.testing.assert_array_equal(psdsos.load(tmp_path / "c.npz").predict(X), multi.predict(X))
    # strings in an object array (a pandas column) are saved as strings; other objects refused
    obj = SELFEstimator(sigma=1.0, output="multiclass").fit(X, names[y].astype(object))
    obj.save(tmp_path / "o.npz")
    np.testing.assert_array_equal(psdsos.load(tmp_path / "o.npz").predict(X), obj.predict(X))
    tup = np.empty(len(y), dtype=object)
    tup[:] = [(int(v),) for v in y]
    with pytest.raises(ValueError, match="dtype object"):
        SELFEstimator(sigma=1.0, output="multiclass").fit(X, tup).save(tmp_path / "t.npz")


# --------------------------------------------------------------------------- sklearn


@pytest.mark.parametrize("output, clf", [
    ("multiclass", True), ("ordinal", True), (MulticlassSpace(k=3), True),
    (OrdinalSpace(), True), ("multilabel", False), ("ranking", False), ("euclidean", False),
    ("sphere", False), (MultilabelSpace(), False), (RankingSpace(), False),
])
def test_classifier_tags_follow_the_output(output, clf):
    assert is_classifier(SELFEstimator(output=output)) is clf
    if isinstance(output, str) and output in ("ordinal", "multilabel", "ranking"):
        assert is_classifier(KRLSEstimator(output=output)) is clf


def test_score_keyword_y_and_accuracy(rng):
    X, y = blobs(rng)
    labels = np.array(["x", "y", "z"])[y]
    est = SELFEstimator(sigma=1.0, output="multiclass").fit(X=X, y=labels)
    Xt = rng.normal(size=(30, 2)) * 3
    yt = labels[:30]
    assert est.score(Xt, y=yt) == accuracy_score(yt, est.predict(Xt))


def test_fold_missing_a_label_neither_fails_nor_nan():
    # unshuffled KFold on iris: each training fold misses one class entirely (once: -1, -1,
    # nan); every test label is then unseen and counted as an error
    X, y = load_iris(return_X_y=True)
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    for target in (y, names):
        for est in (SELFEstimator(output="multiclass"), SELFEstimator(output="ordinal")):
            s = cross_val_score(est, X, target, cv=KFold(3))
            assert np.all(np.isfinite(s)), s
            if est.output == "multiclass":
                np.testing.assert_array_equal(s, 0.0)  # each test fold is the missing class
    # the reported case: cv=3 on iris gave [-1, -1, nan]; now stratified folds, accuracy
    s = cross_val_score(SELFEstimator(output="multiclass"), X, y, cv=3)
    assert np.all(np.isfinite(s)) and s.min() > 0.9, s


def _data(load):
    d = load()
    return d.data, d.target_names[d.target]  # string labels


@pytest.mark.parametrize("load", [load_iris, load_wine], ids=["iris", "wine"])
def test_iris_wine_string_labels_match_svc(load):
    """Acceptance: cross_val_score(cv=3), default scoring and "accuracy", within 0.03 of SVC.

    Both sides standardize the features in a Pipeline; SELF with its defaults (Gaussian
    kernel, sigma="scale", lam=1e-3), SVC with its defaults (RBF, gamma="scale", C=1).
    """
    X, y = _data(load)
    self_ = make_pipeline(StandardScaler(), SELFEstimator(output="multiclass"))
    svc = make_pipeline(StandardScaler(), SVC())
    assert is_classifier(self_)
    ref = cross_val_score(svc, X, y, cv=3)
    for scoring in (None, "accuracy"):
        s = cross_val_score(self_, X, y, cv=3, scoring=scoring)
        assert np.all(np.isfinite(s)) and np.all((s >= 0) & (s <= 1)), s
        assert abs(s.mean() - ref.mean()) <= 0.03, (s, ref)
    # cv=3 on a classifier: the stratified folds
    strat = cross_val_score(self_, X, y, cv=StratifiedKFold(3))
    np.testing.assert_array_equal(cross_val_score(self_, X, y, cv=3), strat)


# --------------------------------------------------------------------------- pickling


def test_pickle_deepcopy_after_cvxpy_decode(rng):
    X, y = blobs(rng, n=30)
    labels = np.array(["a", "b", "c"])[y]
    Xt = rng.normal(size=(6, 2)) * 3
    for output in ("multiclass", "ordinal", "ranking"):
        Y = labels if output != "ranking" else np.argsort(rng.random((30, 3)), axis=1)
        est = SELFEstimator(sigma=1.0, output=output, decode_method="cvxpy").fit(X, Y)
        pred = est.predict(Xt)
        assert est.output_space_._lp is not None  # the cached LP exists
        for clone in (pickle.loads(pickle.dumps(est)), copy.deepcopy(est)):
            np.testing.assert_array_equal(clone.predict(Xt), pred)
        lp = est.output_space_.lp()
        lp2 = pickle.loads(pickle.dumps(lp))  # the PolytopeLP itself
        theta = rng.normal(size=(3,) + lp.polytope.shape)
        np.testing.assert_array_equal(lp2.solve(theta), lp.solve(theta))


def test_pickle_after_bures_sdp_decode(rng):
    X = rng.uniform(-1, 1, (6, 1))
    L = rng.normal(size=(6, 2, 2))
    Y = L @ np.swapaxes(L, 1, 2) + 0.5 * np.eye(2)
    est = SELFEstimator(sigma=0.5, output="bures", decode_method="cvxpy").fit(X, Y)
    pred = est.predict(X[:2])
    clone = pickle.loads(pickle.dumps(est))
    assert clone.output_space_._problem is None  # rebuilt on first use
    np.testing.assert_allclose(clone.predict(X[:2]), pred, rtol=0, atol=1e-6)


def _cross_validate(rng, n_jobs):
    X, y = blobs(rng, n=30)
    labels = np.array(["a", "b", "c"])[y]
    res = cross_validate(SELFEstimator(sigma=1.0, output="multiclass", decode_method="cvxpy"),
                         X, labels, cv=3, return_estimator=True, n_jobs=n_jobs)
    assert np.all(np.isfinite(res["test_score"]))
    ref = SELFEstimator(sigma=1.0, output="multiclass").fit(X, labels)
    for est in res["estimator"]:
        np.testing.assert_array_equal(est.classes_, ref.classes_)
        assert est.predict(X[:4]).shape == (4,)
    return res


def test_cross_validate_return_estimator(rng):
    # fast variant: in process, then the fitted estimators (with their LPs) through pickle
    for est in _cross_validate(rng, None)["estimator"]:
        X = rng.normal(size=(5, 2))
        np.testing.assert_array_equal(pickle.loads(pickle.dumps(est)).predict(X),
                                      est.predict(X))


@pytest.mark.slow
def test_cross_validate_return_estimator_n_jobs(rng):
    # joblib's worker processes pickle the estimators after a CVXPY decode
    _cross_validate(rng, 2)


# --------------------------------------------------------------------------- structure


SMALL = [
    ("multiclass", lambda: MulticlassSpace(k=5)),
    ("multiclass-str", lambda: MulticlassSpace()),
    ("ordinal", lambda: OrdinalSpace(k=5)),
    ("multilabel", lambda: MultilabelSpace(k=4)),
    ("multilabel-count", lambda: MultilabelSpace(k=4, normalize=False)),
    ("ranking", lambda: RankingSpace(k=4)),
    ("ranking-count", lambda: RankingSpace(k=4, normalize=False)),
]


def _train(name, rng, n=12):
    if name.startswith("multiclass-str"):
        return np.array(list("vwxyz"))[rng.integers(0, 5, n)]
    if name.startswith(("multiclass", "ordinal")):
        return rng.integers(0, 5, n)
    if name.startswith("multilabel"):
        return rng.integers(0, 2, (n, 4))
    return np.argsort(rng.random((n, 4)), axis=1)


@pytest.mark.parametrize("name, factory", SMALL, ids=[s[0] for s in SMALL])
def test_structured_scores_equal_the_dense_eq9_formula(name, factory, rng):
    Y = _train(name, rng)
    space = factory().fit(Y)
    alpha = rng.normal(size=(7, len(Y)))
    V, b, c = space.affine_decomposition()
    g = alpha @ space.embed(Y)
    dense = -(g @ V.T + alpha.sum(axis=1)[:, None] * b[None, :])
    np.testing.assert_allclose(space.scores(alpha).reshape(7, -1), dense, rtol=1e-12,
                               atol=1e-12 * np.abs(dense).max())
    # objective through the structure = the loss summed directly
    cand = space.decode(alpha[:1])
    direct = alpha[0] @ space.loss(Y, np.repeat(cand, len(Y), axis=0))
    assert space.objective(alpha[0], cand)[0] == pytest.approx(direct, abs=1e-12)


def test_multiclass_decode_memory_k_10000(rng):
    """k = 10,000 classes, n = 10,000 training labels, 100 test points: fit + decode peak
    under 50 MB (the dense one-hot embedding and V took 2.3 GB)."""
    k = n = 10_000
    y = rng.permutation(n) % k
    alpha = rng.normal(size=(100, n))
    space = MulticlassSpace()
    tracemalloc.start()
    space.fit(y)
    pred = space.decode(alpha)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 50 * 2**20, peak / 2**20
    # reference: argmax of the per-class weight sums (labels are a permutation: class = label)
    ref = np.zeros((100, k))
    ref[:, y] = alpha
    np.testing.assert_array_equal(pred, np.argmax(ref, axis=1))


def test_ranking_decode_memory_k_80(rng):
    """k = 80 labels, n = 200, 20 test points: fit + decode peak under 50 MB (the dense
    k^2 x k^2 V took 325 MB)."""
    from scipy.optimize import linear_sum_assignment

    k, n = 80, 200
    Y = np.argsort(rng.random((n, k)), axis=1)
    alpha = rng.normal(size=(20, n))
    space = RankingSpace()
    tracemalloc.start()
    space.fit(Y)
    pred = space.decode(alpha)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 50 * 2**20, peak / 2**20
    # reference: linear assignment on the weighted sum of the permutation matrices
    P = np.zeros((n, k, k))
    P[np.arange(n)[:, None], np.arange(k)[None, :], Y] = 1.0
    G = np.tensordot(alpha, P, axes=(1, 0))
    for t in range(3):
        rows, cols = linear_sum_assignment(G[t], maximize=True)
        assert G[t][rows, pred[t]].sum() == pytest.approx(G[t][rows, cols].sum(), abs=1e-9)


# --------------------------------------------------------------------------- solvers


_BANNER_SCRIPT = """
import numpy as np
from psdsos.structured import MulticlassSpace
space = MulticlassSpace().fit([0, 1, 2, 1])
print(space.decode(np.array([[1.0, -2.0, 0.5, 0.3]]), method="cvxpy").tolist())
"""


@pytest.mark.slow
def test_lp_decoder_prints_no_highs_banner_fresh_process():
    # the banner is printed once per process: a fresh interpreter is the reliable check
    root = str(Path(psdsos.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [root, *filter(None, [os.environ.get("PYTHONPATH")])])}
    out = subprocess.run([sys.executable, "-c", _BANNER_SCRIPT], capture_output=True,
                         text=True, check=True, env=env)
    assert out.stdout == "[0]\n", out.stdout
    assert "HiGHS" not in out.stderr


def test_lp_decoder_prints_no_highs_banner(capfd):
    # fast variant, in this process (meaningful when it is the first HiGHS solve)
    space = MulticlassSpace().fit([0, 1, 2, 1])
    space.decode(np.array([[1.0, -2.0, 0.5, 0.3]]), method="cvxpy")
    captured = capfd.readouterr()
    assert "HiGHS" not in captured.out and "HiGHS" not in captured.err


def test_tol_reaches_the_bures_sdp_solver(rng, monkeypatch):
    import psdsos.structured.spaces.bures as bures

    seen = []
    real = bures.solve_parametric

    def spy(problem, solver, tol):
        seen.append(tol)
        return real(problem, solver, tol)

    monkeypatch.setattr(bures, "solve_parametric", spy)
    X = rng.uniform(-1, 1, (5, 1))
    Y = np.stack([np.eye(2) * (1 + i) for i in range(5)])
    est = SELFEstimator(sigma=0.5, output="bures", decode_method="cvxpy", tol=1e-5).fit(X, Y)
    assert est.output_space_.solver_tol == 1e-5 and est.output_space_.tol == 1e-5
    est.predict(X[:2])
    assert seen == [1e-5, 1e-5]


def test_discrete_spaces_are_public():
    for name in ("MulticlassSpace", "MultilabelSpace", "RankingSpace", "OrdinalSpace"):
        assert name in structured.__all__
        assert getattr(structured, name).__module__ == "psdsos.structured.spaces.discrete"
