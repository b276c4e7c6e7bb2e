"""Discrete SELF output spaces (multiclass, multilabel/knapsack, ranking, ordinal).

Reference checks: brute force over ALL structures of the SELF objective
sum_i alpha_i L(y, y_i) (random weights of any sign) against the oracle and the LP decodings
(compared by objective value, so ties cannot make the test flaky); the (V, b, c) affine
decomposition of Blondel's eq. 9 against the loss on all pairs; oracle against LP on random
(and integer, tie-prone) scores; projections against CVXPY.
"""

from __future__ import annotations

import itertools

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.exceptions import NotFittedError

from psdsos.structured._base import OutputSpace
from psdsos.structured.polytopes import (
    Birkhoff,
    Knapsack,
    OrderSimplex,
    PolytopeLP,
    Simplex,
    UnitCube,
)
from psdsos.structured.spaces.discrete import (
    DISCRETE_SPACES,
    MulticlassSpace,
    MultilabelSpace,
    OrdinalSpace,
    RankingSpace,
)

# --------------------------------------------------------------------------- helpers


def all_structures(space, k):
    """Every element of the output space, in its Y format (independent of the polytopes)."""
    if isinstance(space, MulticlassSpace | OrdinalSpace):
        return np.arange(k)
    if isinstance(space, RankingSpace):
        return np.array(list(itertools.permutations(range(k))))
    Y = np.array(list(itertools.product([0, 1], repeat=k)))
    lo = space.min_labels
    hi = k if space.max_labels is None else space.max_labels
    return Y[(Y.sum(axis=1) >= lo) & (Y.sum(axis=1) <= hi)]


def all_labelings(space, k):
    """Every valid training output (multilabel training rows ignore the count bounds)."""
    if isinstance(space, MultilabelSpace):
        return np.array(list(itertools.product([0, 1], repeat=k)))
    return all_structures(space, k)


def brute_objectives(space, alpha, Y_train, candidates):
    """sum_i alpha_i L(y, y_i) for every candidate y, straight from ``space.loss``."""
    n = len(Y_train)
    return np.array([
        alpha @ space.loss(Y_train, np.repeat(np.asarray(y)[None], n, axis=0))
        for y in candidates
    ])


def objective_of(space, alpha, Y_train, y):
    return brute_objectives(space, alpha, Y_train, [y])[0]


#: (id, factory, k): small k so that brute force over all structures is cheap
CASES = [
    ("multiclass", lambda: MulticlassSpace(k=4), 4),
    ("ordinal-2", lambda: OrdinalSpace(k=2), 2),
    ("ordinal-5", lambda: OrdinalSpace(k=5), 5),
    ("multilabel", lambda: MultilabelSpace(k=4), 4),
    ("multilabel-count", lambda: MultilabelSpace(k=4, normalize=False), 4),
    ("knapsack-1-2", lambda: MultilabelSpace(k=4, min_labels=1, max_labels=2), 4),
    ("knapsack-2-2", lambda: MultilabelSpace(k=4, min_labels=2, max_labels=2), 4),
    ("knapsack-0-1", lambda: MultilabelSpace(min_labels=0, max_labels=1), 4),
    ("ranking-3", lambda: RankingSpace(k=3), 3),
    ("ranking-4", lambda: RankingSpace(normalize=False), 4),
]
CASE_IDS = [c[0] for c in CASES]


def fitted(factory, k, rng, n_train=9):
    space = factory()
    labelings = all_labelings(space, k)
    Y_train = labelings[rng.integers(0, len(labelings), size=n_train)]
    if isinstance(space, MulticlassSpace | OrdinalSpace):
        Y_train[0] = k - 1  # so that k is also inferred correctly when not given
    return space.fit(Y_train), Y_train


def weight_batch(rng, n_train):
    """Random weights of every sign pattern, plus all-zero (everything tied) weights."""
    return np.vstack([
        rng.normal(size=(4, n_train)),                     # mixed signs
        -np.abs(rng.normal(size=(2, n_train))),            # all negative
        np.abs(rng.normal(size=(2, n_train))),             # all positive (usual SELF case)
        rng.integers(-2, 3, size=(2, n_train)),            # integers: many ties
        np.zeros((1, n_train)),                            # all tied
    ])


# --------------------------------------------------------------------------- registry


def test_registry_names_and_config():
    assert set(DISCRETE_SPACES) == {"multiclass", "multilabel", "ranking", "ordinal"}
    for name, cls in DISCRETE_SPACES.items():
        assert issubclass(cls, OutputSpace)
        assert cls.name == name
        space = cls()
        assert space.decode_methods[0] == "oracle" and "cvxpy" in space.decode_methods
        clone = cls.from_config(space.to_config())
        assert clone.to_config() == space.to_config()
        assert not any(a.endswith("_") and not a.startswith("_") for a in vars(space))
    cfg = MultilabelSpace(k=5, min_labels=1, max_labels=3, normalize=False).to_config()
    assert MultilabelSpace.from_config(cfg).to_config() == cfg


# --------------------------------------------------------------------------- decomposition


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_affine_decomposition_reproduces_loss_on_all_pairs(case, rng):
    _, factory, k = case
    space, _ = fitted(factory, k, rng)
    V, b, c = space.affine_decomposition()
    Y = all_labelings(space, k)
    Phi = space.embed(Y)
    assert Phi.shape == (len(Y), V.shape[0]) and b.shape == (V.shape[0],)
    assert set(np.unique(Phi)) <= {0.0, 1.0}
    # eq. 9: L(yhat, y) = <phi(yhat), V phi(y) + b> + c(y)   (rows yhat, columns y)
    L_dec = Phi @ (Phi @ V.T + b).T + c(Y)[None, :]
    idx_hat, idx = np.meshgrid(np.arange(len(Y)), np.arange(len(Y)), indexing="ij")
    L_true = space.loss(Y[idx.ravel()], Y[idx_hat.ravel()]).reshape(len(Y), len(Y))
    np.testing.assert_allclose(L_dec, L_true, rtol=0, atol=1e-12)
    assert np.all(np.diag(L_true) == 0) and np.all(L_true >= 0)


# --------------------------------------------------------------------------- decoding


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_decode_matches_brute_force(case, rng):
    _, factory, k = case
    space, Y_train = fitted(factory, k, rng)
    alpha = weight_batch(rng, len(Y_train))
    cand = all_structures(space, k)
    expected = np.array([brute_objectives(space, a, Y_train, cand).min() for a in alpha])
    for method in ("oracle", "cvxpy", "auto"):
        Y_hat = space.decode(alpha, method)
        assert Y_hat.shape == (len(alpha),) + Y_train.shape[1:]
        assert Y_hat.dtype == np.int64
        space.check_Y(Y_hat, "Y_hat")
        got = np.array([objective_of(space, a, Y_train, y)
                        for a, y in zip(alpha, Y_hat, strict=True)])
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
        if isinstance(space, MultilabelSpace):
            lo = space.min_labels
            hi = k if space.max_labels is None else space.max_labels
            assert np.all((Y_hat.sum(axis=1) >= lo) & (Y_hat.sum(axis=1) <= hi))
    # the objective through eq. 9 equals the brute-force sum of losses
    for a in alpha[:3]:
        np.testing.assert_allclose(space.objective(a, cand),
                                   brute_objectives(space, a, Y_train, cand), atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_decode_is_deterministic_and_single_point(case, rng):
    _, factory, k = case
    space, Y_train = fitted(factory, k, rng)
    alpha = rng.integers(-1, 2, size=(3, len(Y_train))).astype(float)
    for method in ("oracle", "cvxpy"):
        first = space.decode(alpha, method)
        np.testing.assert_array_equal(space.decode(alpha, method), first)
        one = space.decode(alpha[0], method)
        assert one.shape == (1,) + Y_train.shape[1:]
    np.testing.assert_array_equal(space.decode(alpha[0]), space.decode(alpha[:1]))


def test_oracle_tie_breaking_documented():
    zeros = np.zeros((1, 3))
    assert MulticlassSpace(k=3).fit([2, 1, 0]).decode(zeros)[0] == 0  # smallest label
    assert OrdinalSpace(k=3).fit([2, 1, 0]).decode(zeros)[0] == 0
    ml = MultilabelSpace().fit(np.eye(3, dtype=int))
    np.testing.assert_array_equal(ml.decode(zeros), [[0, 0, 0]])  # theta = 0: not predicted
    kn = MultilabelSpace(min_labels=1, max_labels=2).fit(np.eye(3, dtype=int))
    np.testing.assert_array_equal(kn.decode(zeros), [[1, 0, 0]])  # stable sort: first label


def test_negative_weights_can_select_an_absent_class():
    # objective of class j: sum_i alpha_i 1[y_i != j] = -#(y_i != j); class 2 is absent
    space = MulticlassSpace(k=3).fit([0, 0, 1])
    alpha = -np.ones((1, 3))
    assert space.decode(alpha, "oracle")[0] == 2
    assert space.decode(alpha, "cvxpy")[0] == 2
    # with k inferred (=2) class 2 does not exist
    assert MulticlassSpace().fit([0, 0, 1]).decode(alpha)[0] == 1


def test_sum_of_weights_multiplies_b():
    # sum(alpha) != 1: the decoding must use theta = -(V g + s b) (eq. 9 with s = sum alpha)
    space = MultilabelSpace().fit([[1, 0], [1, 0], [0, 1]])
    alpha = np.array([[0.4, 0.4, 0.9]])  # s = 1.7; label 0 weight 0.8 < s / 2
    np.testing.assert_array_equal(space.decode(alpha), [[0, 1]])
    np.testing.assert_allclose(space.scores(alpha), [[(1.6 - 1.7) / 2, (1.8 - 1.7) / 2]])


def test_ordinal_positive_weights_give_weighted_median(rng):
    y = rng.integers(0, 6, size=15)
    space = OrdinalSpace(k=6).fit(y)
    w = rng.uniform(0.1, 1.0, size=(5, 15))
    for wj, pred in zip(w, space.decode(w), strict=True):
        order = np.argsort(y)
        cum = np.cumsum(wj[order])
        median = y[order][np.searchsorted(cum, cum[-1] / 2)]
        assert objective_of(space, wj, y, pred) <= objective_of(space, wj, y, median) + 1e-12


def test_ranking_identity_training_set_and_layout():
    space = RankingSpace().fit([[2, 0, 1], [2, 0, 1], [0, 1, 2]])
    P = space.permutation_matrices([[2, 0, 1]])[0]
    np.testing.assert_array_equal(P, [[0, 0, 1], [1, 0, 0], [0, 1, 0]])  # P[i, y_i] = 1
    np.testing.assert_array_equal(space.decode([[1.0, 1.0, 0.5]]), [[2, 0, 1]])
    np.testing.assert_allclose(space.loss([[2, 0, 1]], [[2, 1, 0]]), [2 / 3])


def test_lp_is_built_once_and_dpp(rng):
    for _, factory, k in CASES:
        space, Y_train = fitted(factory, k, rng)
        lp = space.lp()
        assert isinstance(lp, PolytopeLP)
        assert lp.problem.is_dcp(dpp=True)
        assert lp.problem.is_dpp()
        assert lp.theta.shape == space.polytope_.shape
        space.decode(rng.normal(size=(2, len(Y_train))), "cvxpy")
        assert space.lp() is lp
        space.fit(Y_train)  # refit drops the cached LP (k may change)
        assert space.lp() is not lp


def test_clarabel_lp_decoding(rng):
    for _, factory, k in CASES[:6] + CASES[8:9]:
        space = factory()
        space.lp_solver = "CLARABEL"
        labelings = all_labelings(space, k)
        Y_train = labelings[rng.integers(0, len(labelings), size=8)]
        Y_train[0] = labelings[-1]
        space.fit(Y_train)
        alpha = rng.normal(size=(3, 8))
        for a, y in zip(alpha, space.decode(alpha, "cvxpy"), strict=True):
            best = brute_objectives(space, a, Y_train, all_structures(space, k)).min()
            assert objective_of(space, a, Y_train, y) == pytest.approx(best, abs=1e-9)


# --------------------------------------------------------------------------- properties

POLYTOPES = {
    "simplex": Simplex(4),
    "cube": UnitCube(4),
    "knapsack": Knapsack(4, 1, 2),
    "knapsack-eq": Knapsack(5, 3, 3),
    "birkhoff": Birkhoff(3),
    "birkhoff-4": Birkhoff(4),
    "order": OrderSimplex(5),
    "order-2": OrderSimplex(2),
}
LPS = {name: PolytopeLP(P) for name, P in POLYTOPES.items()}


def _scores(P):
    floats = arrays(np.float64, P.shape, elements=st.floats(-10, 10, allow_subnormal=False))
    ints = arrays(np.float64, P.shape, elements=st.integers(-2, 2).map(float))
    return st.one_of(floats, ints)


@st.composite
def polytope_and_scores(draw):
    name = draw(st.sampled_from(sorted(POLYTOPES)))
    return name, draw(_scores(POLYTOPES[name]))


@given(polytope_and_scores())
def test_oracle_and_lp_agree_on_random_scores(case):
    name, theta = case
    P = POLYTOPES[name]
    v_oracle = P.map_oracle(theta)
    v_lp = LPS[name].solve(theta)
    for v in (v_oracle, v_lp):
        assert v.shape == P.shape
        assert set(np.unique(v)) <= {0.0, 1.0}
        assert P.contains(v)
    # exact up to the LP solver's tolerance (1e-9, at the unit scale max|theta| = 1)
    tol = 1e-9 * (1.0 + np.abs(theta).sum())
    assert np.sum(theta * v_oracle) == pytest.approx(np.sum(theta * v_lp), abs=tol)
    # and the LP optimum (solved at unit scale) is the oracle's value
    scale = np.abs(theta).max() if np.any(theta) else 1.0
    assert LPS[name].problem.value * scale == pytest.approx(np.sum(theta * v_oracle), abs=tol)


@given(st.sampled_from(CASE_IDS), st.integers(0, 2**32 - 1), st.floats(1e-3, 1e3))
def test_decoded_outputs_are_valid_structures(case_id, seed, scale):
    _, factory, k = CASES[CASE_IDS.index(case_id)]
    rng = np.random.default_rng(seed)
    space, Y_train = fitted(factory, k, rng, n_train=6)
    alpha = scale * rng.standard_t(2, size=(3, 6))
    Y_hat = space.decode(alpha)
    space.check_Y(Y_hat, "Y_hat")
    if isinstance(space, MultilabelSpace):
        lo = space.min_labels
        hi = k if space.max_labels is None else space.max_labels
        assert np.all((Y_hat.sum(axis=1) >= lo) & (Y_hat.sum(axis=1) <= hi))
    cand = all_structures(space, k)
    for a, y in zip(alpha, Y_hat, strict=True):
        best = brute_objectives(space, a, Y_train, cand).min()
        assert objective_of(space, a, Y_train, y) <= best + 1e-9 * (1 + np.abs(a).sum())


# --------------------------------------------------------------------------- projections

PROJECTABLE = ["simplex", "cube", "knapsack", "knapsack-eq", "order", "order-2", "birkhoff",
               "birkhoff-4"]


def _cvxpy_projection(P, theta):
    mu = cp.Variable(P.shape)
    prob = cp.Problem(cp.Minimize(cp.sum_squares(mu - theta)), P.cvxpy_constraints(mu))
    prob.solve(solver="CLARABEL")
    assert prob.status == cp.OPTIMAL
    return mu.value


@pytest.mark.parametrize("name", PROJECTABLE)
def test_euclidean_projection_matches_cvxpy(name, rng):
    P = POLYTOPES[name]
    theta = 2.0 * rng.normal(size=(6,) + P.shape)
    mu = P.project_euclidean(theta)
    assert np.all(P.contains(mu, atol=1e-9))
    np.testing.assert_allclose(P.project_euclidean(mu), mu, atol=1e-9)  # idempotent
    for t, m in zip(theta, mu, strict=True):
        np.testing.assert_allclose(m, _cvxpy_projection(P, t), atol=1e-6)
    np.testing.assert_allclose(P.project_euclidean(theta[0]), mu[0])  # unbatched input
    assert np.all(np.isfinite(P.project_euclidean(1e9 * theta)))


def test_kl_projections(rng):
    # KKT of min_mu KL(mu, exp(theta - 1)) over the set: log mu - (theta - 1) + normal cone = 0
    theta = 2.0 * rng.normal(size=(5, 4))
    mu = Simplex(4).project_kl(theta)
    assert np.all(Simplex(4).contains(mu))
    gap = np.log(mu) - (theta - 1.0)
    np.testing.assert_allclose(gap, gap[:, :1] * np.ones(4), atol=1e-12)  # mu proportional to v
    mu = UnitCube(4).project_kl(theta)
    assert np.all(UnitCube(4).contains(mu))
    gap = np.log(mu) - (theta - 1.0)
    assert np.all(gap <= 1e-12)  # multiplier of mu <= 1 is >= 0 ...
    assert np.all((np.abs(gap) <= 1e-12) | (mu == 1.0))  # ... and 0 where mu < 1
    # every polytope has both projections now (the optimality of the others:
    # tests/test_projections.py); they land in the set
    for P in (Knapsack(4, 1, 2), OrderSimplex(5), Birkhoff(4)):
        t = 2.0 * rng.normal(size=(3,) + P.shape)
        assert np.all(P.contains(P.project_kl(t), atol=1e-9))
        assert np.all(P.contains(P.project_euclidean(t), atol=1e-9))


def test_rounding_returns_the_nearest_vertex(rng):
    for P in (Simplex(4), UnitCube(4), Knapsack(4, 1, 3), OrderSimplex(4), Birkhoff(3)):
        verts = np.array([P.map_oracle(rng.normal(size=P.shape)) for _ in range(200)])
        verts = np.unique(verts.reshape(len(verts), -1), axis=0)
        for _ in range(5):
            mu = P.project_euclidean(rng.normal(size=P.shape)) if not isinstance(P, Birkhoff) \
                else np.full(P.shape, 1 / 3) + 0.1 * np.array([[1, -1, 0], [-1, 1, 0], [0, 0, 0]])
            r = P.round(mu).ravel()
            d = np.sum((verts - mu.ravel()) ** 2, axis=1)
            assert np.sum((r - mu.ravel()) ** 2) == pytest.approx(d.min())


# --------------------------------------------------------------------------- bad input

BAD_Y = {
    "multiclass": [
        ([[0, 1], [1, 0]], "shape"),
        ([0, 1, 4], "0..3"),
        ([0, -1, 2], "labels"),
        ([0, np.nan, 1], "NaN"),
        ([0, 1.5, 1], "integer"),
        (["a", "b"], "numeric"),
        ([], "at least one"),
    ],
    "ordinal": [
        ([[0], [1]], "shape"),
        ([0, 1, 4], "0..3"),
        ([0, np.inf], "NaN or infinite"),
        ([0.0, 2.2], "integer"),
        ([1j, 0], "numeric"),
    ],
    "multilabel": [
        ([0, 1, 1, 0], "shape"),
        ([[0, 1, 2, 0]], "0/1"),
        ([[0, 1, 1]], "k = 4"),
        ([[0, np.nan, 1, 0]], "NaN"),
        ([[0, 0.5, 1, 0]], "integer"),
    ],
    "ranking": [
        ([0, 1, 2, 3], "shape"),
        ([[0, 1, 1, 3]], "permutations"),
        ([[1, 2, 3, 4]], "permutations"),
        ([[0, 1, 2]], "k = 4"),
        ([[0, 1, 2, np.nan]], "NaN"),
        ([[0, 1, 2.5, 3]], "integer"),
    ],
}


@pytest.mark.parametrize("name", sorted(BAD_Y))
def test_bad_Y_raises_naming_Y(name):
    cls = DISCRETE_SPACES[name]
    for Y, what in BAD_Y[name]:
        with pytest.raises(ValueError, match="Y") as err:
            cls(k=4).fit(Y)
        assert what in str(err.value), (Y, str(err.value))
        with pytest.raises(ValueError, match="Y_true"):
            cls(k=4).loss(Y, Y)
    good = {"multiclass": [0, 1], "ordinal": [0, 3], "multilabel": [[0, 1, 1, 0]] * 2,
            "ranking": [[0, 1, 2, 3]] * 2}[name]
    space = cls(k=4).fit(good)
    with pytest.raises(ValueError, match="Y_pred"):
        space.loss(good, BAD_Y[name][1][0])
    with pytest.raises(ValueError, match="same shape"):
        space.loss(good, good[:1])


def test_bad_parameters_and_alpha():
    space = MulticlassSpace(k=3).fit([0, 1, 2])
    with pytest.raises(ValueError, match="alpha"):
        space.decode(np.ones((2, 4)))
    with pytest.raises(ValueError, match="alpha"):
        space.decode([[np.nan, 0, 0]])
    with pytest.raises(ValueError, match="decode_method"):
        space.decode(np.ones((1, 3)), "rgd")
    with pytest.raises(NotFittedError):
        MulticlassSpace().decode(np.ones((1, 3)))
    with pytest.raises(ValueError, match="lp_solver"):
        MulticlassSpace(lp_solver="MOSEKK").fit([0, 1])
    with pytest.raises(ValueError, match="k"):
        MulticlassSpace(k=0).fit([0, 1])
    with pytest.raises(ValueError, match="k"):
        OrdinalSpace().fit([0, 0])
    with pytest.raises(ValueError, match="max_labels"):
        MultilabelSpace(min_labels=2, max_labels=1).fit([[0, 1, 1]])
    with pytest.raises(ValueError, match="max_labels"):
        MultilabelSpace(max_labels=4).fit([[0, 1, 1]])
    with pytest.raises(ValueError, match="min_labels"):
        MultilabelSpace(min_labels=-1).fit([[0, 1, 1]])
    with pytest.raises(ValueError, match="normalize"):
        RankingSpace(normalize="yes").fit([[0, 1]])
    with pytest.raises(ValueError, match="scores"):
        Simplex(3).map_oracle(np.ones(4))
    with pytest.raises(ValueError, match="lower <= upper"):
        Knapsack(3, 2, 1)


@pytest.mark.parametrize("space_cls", [MulticlassSpace, OrdinalSpace])
@pytest.mark.parametrize("k", [0, -1, 2.0, True, "3"])
def test_label_space_k_is_checked_first(space_cls, k):
    """k = 0 (or a float, a bool, a string) names k and what is expected -- also through the
    estimator, whose y check runs before the space's fit (it used to say "labels in 0..-1")."""
    from psdsos.structured import SELFEstimator

    minimum = 2 if space_cls is OrdinalSpace else 1
    msg = rf"^k of {space_cls.__name__} \(the number of classes\) must be an integer >= {minimum}"
    with pytest.raises(ValueError, match=msg):
        space_cls(k=k).fit([0, 1])
    with pytest.raises(ValueError, match=msg):
        space_cls(k=k).check_Y([0, 1], "y")
    X = np.arange(6.0)[:, None]
    with pytest.raises(ValueError, match=msg):
        SELFEstimator(output=space_cls(k=k)).fit(X, [0, 1, 0, 1, 0, 1])


def test_ordinal_k_one_is_refused_multiclass_k_one_is_a_label_set():
    with pytest.raises(ValueError, match=r"must be an integer >= 2, got 1"):
        OrdinalSpace(k=1).fit([0, 0])
    sp = MulticlassSpace(k=1).fit([0, 0, 0])
    assert sp.classes_.tolist() == [0]
    assert sp.decode(np.array([[0.5, -0.2, 0.1]])).tolist() == [0]


@pytest.mark.parametrize("space_cls", [MulticlassSpace, OrdinalSpace])
def test_label_space_huge_k_refused_before_allocating(space_cls):
    """k = 1e9 used to allocate classes_ = arange(k), 7.45 GiB (the process was killed):
    refused above MAX_CLASSES with the memory it would need; the limit itself works."""
    from psdsos.structured.spaces._label_space import MAX_CLASSES

    with pytest.raises(ValueError, match=r"at most 16777216 \(MAX_CLASSES\), got 1000000000: "
                                         r"the label set classes_ alone would need 7\.45 GiB"):
        space_cls(k=10**9).fit([0, 1])
    with pytest.raises(ValueError, match="MAX_CLASSES"):
        space_cls(k=MAX_CLASSES + 1).check_Y([0, 1])
    sp = MulticlassSpace(k=MAX_CLASSES).fit([0, 1, 5])
    assert sp.k_ == MAX_CLASSES
    # the decoding scores are blocked: one test point per block at this k
    out = sp.decode(np.array([[0.2, 0.3, -0.1], [-0.2, -0.3, -0.1]]))
    assert out[0] == 1 and out[1] == 2  # an unseen class (sum 0) beats negative sums


def test_multilabel_training_rows_may_violate_count_bounds():
    # the bounds constrain predictions only (Blondel sets u from training statistics)
    space = MultilabelSpace(min_labels=1, max_labels=1).fit([[1, 1, 1], [0, 0, 0]])
    pred = space.decode(np.array([[1.0, 0.0], [0.0, 1.0]]))
    assert np.all(pred.sum(axis=1) == 1)


# --------------------------------------------------------------------------- KRLS projections


def test_project_gives_nearest_structure(rng):
    """``project`` (used by KRLSEstimator) = nearest structure in the Y encoding."""
    spaces = [(MultilabelSpace(k=4), 4), (MultilabelSpace(k=4, min_labels=1, max_labels=2), 4),
              (RankingSpace(k=4), 4), (OrdinalSpace(k=5), 5)]
    for space, k in spaces:
        labelings = all_labelings(space, k)
        space.fit(labelings[rng.integers(0, len(labelings), size=6)])
        cand = all_structures(space, k).astype(float)
        shape = (7,) + cand.shape[1:]
        Z = rng.normal(size=shape) * (k / 2) + (k / 2 if cand.ndim == 1 else 0.5)
        P = space.project(Z)
        space.check_Y(P, "P")
        for z, p in zip(Z, P, strict=True):
            d = ((cand - z) ** 2).reshape(len(cand), -1).sum(axis=1)
            assert np.sum((p - z) ** 2) == pytest.approx(d.min())
    with pytest.raises(NotImplementedError):
        MulticlassSpace(k=3).fit([0, 1]).project(np.zeros(2))
    with pytest.raises(ValueError, match="Z"):
        RankingSpace().fit([[0, 1]]).project(np.zeros((2, 3)))
