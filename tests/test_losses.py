"""psdsos.losses: values, conjugates, proxes and CVXPY expressions against independent
references (Fenchel-Young, scipy's numerical sup, CVXPY + Clarabel, the Moreau identity)."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from scipy.optimize import minimize

from psdsos.losses import (
    LOSSES,
    AbsoluteLoss,
    EmpiricalLoss,
    EntrywiseHuberLoss,
    ExpectileLoss,
    HuberLoss,
    Loss,
    QuantileLoss,
    SquaredLoss,
    get_loss,
)

MATRIX_LOSSES = [SquaredLoss(), HuberLoss(0.7), EntrywiseHuberLoss(0.4), AbsoluteLoss()]
SCALAR_LOSSES = MATRIX_LOSSES + [QuantileLoss(0.2), QuantileLoss(0.9), ExpectileLoss(0.15),
                                 ExpectileLoss(0.8)]
ids = repr


def _sym(rng, n, d, scale=1.0):
    A = scale * rng.standard_normal((n, d, d))
    return 0.5 * (A + A.transpose(0, 2, 1))


def _batch(loss, rng, n=6, d=2, scale=1.0):
    """Random residuals: scalars for scalar-only losses, else symmetric d x d matrices."""
    if loss.scalar_only or d == 0:
        return scale * rng.standard_normal(n)
    return _sym(rng, n, d, scale)


def _in_domain(loss, S, frac=0.9):
    """Scale S into the domain of the conjugate (strictly inside)."""
    if isinstance(loss, HuberLoss):
        return loss.grad(S / 0.7 * 10) * frac
    if isinstance(loss, EntrywiseHuberLoss):
        return np.clip(S, -loss.delta, loss.delta) * frac
    if isinstance(loss, AbsoluteLoss):
        return AbsoluteLoss().grad(S) * frac * np.random.default_rng(1).uniform(
            0, 1, size=(len(S),) + (1,) * (S.ndim - 1))
    if isinstance(loss, QuantileLoss):
        t = loss.quantile
        return np.clip(S, -t, 1 - t) * frac
    return S


def _all_cases():
    cases = []
    for loss in MATRIX_LOSSES:
        cases += [(loss, 2), (loss, 1)]
    for loss in SCALAR_LOSSES[len(MATRIX_LOSSES):]:
        cases.append((loss, 0))
    for loss in MATRIX_LOSSES:
        cases.append((loss, 0))
    return cases


CASES = _all_cases()


def _shape(loss, d):
    return "scalar" if (d == 0 or loss.scalar_only) else f"d={d}"


@pytest.mark.parametrize("loss, d", CASES, ids=[f"{lo!r}-{_shape(lo, d)}" for lo, d in CASES])
def test_fenchel_young_inequality_and_equality_at_the_gradient(loss, d):
    rng = np.random.default_rng(0)
    R = _batch(loss, rng, n=40, d=d, scale=1.5)
    G = loss.grad(R)
    # equality at S = grad l(R) (a subgradient for the non-smooth losses)
    lhs = loss.value(R) + loss.conjugate(G)
    ip = np.sum((G * R).reshape(len(R), -1), axis=1)
    np.testing.assert_allclose(lhs, ip, rtol=1e-12, atol=1e-12)
    # inequality everywhere (S random, inside or outside the domain)
    for _ in range(5):
        S = _batch(loss, rng, n=40, d=d, scale=rng.uniform(0.1, 2.0))
        ip = np.sum((S * R).reshape(len(R), -1), axis=1)
        assert np.all(loss.value(R) + loss.conjugate(S) >= ip - 1e-12)


@pytest.mark.parametrize("loss, d", CASES, ids=[f"{lo!r}-{_shape(lo, d)}" for lo, d in CASES])
def test_conjugate_matches_a_numerical_sup(loss, d):
    """l^*(S) = sup_R <S, R> - l(R), computed by scipy (BFGS from the origin; the
    objective is concave and finite, bounded above for S inside the domain)."""
    rng = np.random.default_rng(1)
    S = _in_domain(loss, _batch(loss, rng, n=4, d=d))
    conj = loss.conjugate(S)
    assert np.all(np.isfinite(conj))
    shape = S.shape[1:]
    for i in range(len(S)):
        def neg(x, i=i):
            R = x.reshape((1,) + shape)
            if R.ndim == 3:
                R = 0.5 * (R + R.transpose(0, 2, 1))
            return -(float(np.vdot(S[i], R[0])) - float(loss.value(R)[0]))
        x0 = np.zeros(int(np.prod(shape)) if shape else 1)
        if loss.is_smooth:
            res = minimize(neg, x0, method="BFGS", options={"gtol": 1e-10})
            sup = -res.fun
        else:
            # non-smooth losses with indicator conjugates: the sup is 0 at R = 0 inside
            # the domain; check no random point exceeds it and R = 0 attains it
            sup = -neg(x0)
            pts = rng.standard_normal((2000, x0.size)) * rng.uniform(0, 5, (2000, 1))
            assert max(-neg(p) for p in pts) <= sup + 1e-12
        np.testing.assert_allclose(conj[i], sup, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("loss, d", CASES, ids=[f"{lo!r}-{_shape(lo, d)}" for lo, d in CASES])
def test_conjugate_is_infinite_outside_the_domain(loss, d):
    """Outside the domain <S, R> - l(R) grows without bound along some R (checked at
    t * S for the ball losses and the box directions for the box losses)."""
    if loss.conjugate_is_smooth:
        assert np.all(np.isfinite(loss.conjugate(_batch(loss, np.random.default_rng(2),
                                                        d=d, scale=100.0))))
        return
    rng = np.random.default_rng(2)
    S = _batch(loss, rng, n=5, d=d, scale=50.0)
    assert np.all(np.isinf(loss.conjugate(S)))
    R = 1e6 * np.sign(S)
    ip = np.sum((S * R).reshape(len(S), -1), axis=1)
    assert np.all(ip - loss.value(R) > 1e6)


def _prox_loss_cvxpy(loss, X, inv_step, d):
    """prox_{l / eta}(X) = argmin_Z (1/eta) l(Z) + |Z - X|^2 / 2 by CVXPY (Clarabel),
    from the loss's own CVXPY expression."""
    n = len(X)
    flat = X.reshape(n, -1) if X.ndim > 1 else X
    Z = cp.Variable(flat.shape)
    obj = inv_step * cp.sum(loss.cvxpy_expr(Z)) + 0.5 * cp.sum_squares(Z - flat)
    cp.Problem(cp.Minimize(obj)).solve(solver="CLARABEL", tol_gap_abs=1e-10,
                                       tol_gap_rel=1e-10, tol_feas=1e-10)
    return np.asarray(Z.value).reshape(X.shape)


@pytest.mark.parametrize("loss, d", CASES, ids=[f"{lo!r}-{_shape(lo, d)}" for lo, d in CASES])
@pytest.mark.parametrize("step", [0.3, 2.0])
def test_prox_of_the_conjugate_matches_cvxpy_through_the_moreau_identity(loss, d, step):
    """V = prox_{eta l^*}(V) + eta prox_{l/eta}(V/eta): the right-hand prox solved by
    CVXPY from cvxpy_expr (so the prox and the CVXPY expression check each other)."""
    rng = np.random.default_rng(3)
    V = _batch(loss, rng, n=5, d=d, scale=1.5)
    P = loss.prox_conjugate(V, step)
    Q = _prox_loss_cvxpy(loss, V / step, 1.0 / step, d)
    np.testing.assert_allclose(P + step * Q, V, atol=2e-6)
    # and the prox is the minimizer of step l^*(S) + |S - V|^2/2: no better random point
    # inside the domain (first-order check by perturbation)
    f = step * loss.conjugate(P) + 0.5 * np.sum((P - V).reshape(len(V), -1) ** 2, axis=1)
    for _ in range(20):
        Sp = P + 1e-3 * _batch(loss, rng, n=5, d=d)
        fp = step * loss.conjugate(Sp) + 0.5 * np.sum((Sp - V).reshape(len(V), -1) ** 2, axis=1)
        assert np.all(fp >= f - 1e-12)


@pytest.mark.parametrize("step_kind", ["scalar", "per-sample"])
def test_prox_accepts_per_sample_steps(step_kind):
    rng = np.random.default_rng(4)
    V = _sym(rng, 4, 2)
    loss = HuberLoss(0.5)
    steps = np.array([0.1, 1.0, 3.0, 0.5])
    if step_kind == "scalar":
        np.testing.assert_allclose(loss.prox_conjugate(V, 0.7),
                                   loss.prox_conjugate(V, np.full(4, 0.7)))
    else:
        P = loss.prox_conjugate(V, steps)
        for i in range(4):
            np.testing.assert_allclose(P[i], loss.prox_conjugate(V[i:i + 1], steps[i])[0])


@pytest.mark.parametrize("loss, d", CASES, ids=[f"{lo!r}-{_shape(lo, d)}" for lo, d in CASES])
def test_cvxpy_expression_equals_value(loss, d):
    rng = np.random.default_rng(5)
    R = _batch(loss, rng, n=7, d=d, scale=1.3)
    n = len(R)
    flat = R.reshape(n, -1) if R.ndim > 1 else R
    np.testing.assert_allclose(loss.cvxpy_expr(cp.Constant(flat)).value, loss.value(R),
                               rtol=1e-12, atol=1e-14)
    if R.ndim == 3:
        # upper triangles with multiplicities (1 on the diagonal, 2 off it)
        iu, ju = np.triu_indices(R.shape[1])
        mult = np.where(iu == ju, 1.0, 2.0)
        expr = loss.cvxpy_expr(cp.Constant(R[:, iu, ju]), multiplicity=mult)
        np.testing.assert_allclose(expr.value, loss.value(R), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("loss", [SquaredLoss(), HuberLoss(0.3), EntrywiseHuberLoss(0.3),
                                  ExpectileLoss(0.3)], ids=ids)
def test_gradients_by_finite_differences(loss):
    rng = np.random.default_rng(6)
    R = _batch(loss, rng, n=5, d=2, scale=1.2)
    G = loss.grad(R)
    H = _batch(loss, rng, n=5, d=2)
    eps = 1e-6
    fd = (loss.value(R + eps * H) - loss.value(R - eps * H)) / (2 * eps)
    np.testing.assert_allclose(fd, np.sum((G * H).reshape(5, -1), axis=1), atol=1e-7)
    if loss.conjugate_is_smooth:
        S = _batch(loss, rng, n=5, d=2)
        fd = (loss.conjugate(S + eps * H) - loss.conjugate(S - eps * H)) / (2 * eps)
        np.testing.assert_allclose(
            fd, np.sum((loss.conjugate_grad(S) * H).reshape(5, -1), axis=1), atol=1e-7)


def test_huber_equals_squared_for_large_delta_and_expectile_half_equals_squared():
    rng = np.random.default_rng(7)
    R = _sym(rng, 10, 3)
    big = HuberLoss(1e3)
    np.testing.assert_array_equal(big.value(R), SquaredLoss().value(R))
    np.testing.assert_array_equal(big.prox_conjugate(R, 0.5), SquaredLoss().prox_conjugate(R, 0.5))
    np.testing.assert_array_equal(EntrywiseHuberLoss(1e3).value(R), SquaredLoss().value(R))
    r = rng.standard_normal(10)
    np.testing.assert_allclose(ExpectileLoss(0.5).value(r), SquaredLoss().value(r), rtol=1e-15)
    np.testing.assert_allclose(ExpectileLoss(0.5).conjugate(r), SquaredLoss().conjugate(r),
                               rtol=1e-15)
    # scalar Huber: Frobenius and entrywise agree
    np.testing.assert_allclose(HuberLoss(0.4).value(r), EntrywiseHuberLoss(0.4).value(r))


def test_quantile_minimizer_is_a_quantile():
    rng = np.random.default_rng(8)
    y = rng.standard_normal(201)
    for tau in (0.1, 0.5, 0.9):
        loss = QuantileLoss(tau)
        grid = np.linspace(-3, 3, 6001)
        vals = [loss.value(f - y).sum() for f in grid]
        np.testing.assert_allclose(grid[int(np.argmin(vals))], np.quantile(y, tau), atol=2e-3)


def test_constants():
    assert SquaredLoss().smoothness == 1 and SquaredLoss().lipschitz() == np.inf
    assert HuberLoss(0.5).lipschitz(3) == 0.5
    assert EntrywiseHuberLoss(0.5).lipschitz(3) == 1.5
    assert AbsoluteLoss().lipschitz() == 1.0 and not AbsoluteLoss().is_smooth
    assert QuantileLoss(0.2).lipschitz() == 0.8
    e = ExpectileLoss(0.2)
    assert e.smoothness == 1.6 and e.conjugate_smoothness == 1.0 / 0.4
    # the smoothness constants bound the gradients' variation (checked on random pairs)
    rng = np.random.default_rng(9)
    for loss in (HuberLoss(0.3), EntrywiseHuberLoss(0.3), SquaredLoss()):
        A, B = _sym(rng, 200, 2, 2.0), _sym(rng, 200, 2, 2.0)
        dg = np.sqrt(np.sum((loss.grad(A) - loss.grad(B)) ** 2, axis=(1, 2)))
        dr = np.sqrt(np.sum((A - B) ** 2, axis=(1, 2)))
        assert np.all(dg <= loss.smoothness * dr + 1e-12)
        gn = np.sqrt(np.sum(loss.grad(A) ** 2, axis=(1, 2)))
        assert np.all(gn <= loss.lipschitz(2) + 1e-12)
    r, s = 3 * rng.standard_normal(200), 3 * rng.standard_normal(200)
    assert np.all(np.abs(e.grad(r) - e.grad(s)) <= e.smoothness * np.abs(r - s) + 1e-12)


def test_get_loss_resolves_and_names_bad_arguments():
    assert isinstance(get_loss("squared"), SquaredLoss)
    assert get_loss("HUBER", delta=2.0).delta == 2.0
    assert get_loss("quantile", quantile=0.3).quantile == 0.3
    obj = HuberLoss(1.0)
    assert get_loss(obj) is obj
    assert set(LOSSES) == {"squared", "huber", "huber_entrywise", "absolute", "quantile",
                           "expectile"}
    with pytest.raises(ValueError, match="loss must be one of"):
        get_loss("hinge")
    with pytest.raises(ValueError, match="delta"):
        get_loss("huber")
    with pytest.raises(ValueError, match="delta"):
        get_loss("huber_entrywise", delta=-1.0)
    with pytest.raises(ValueError, match="delta"):
        get_loss("huber", delta=True)
    with pytest.raises(ValueError, match="quantile"):
        get_loss("quantile")
    with pytest.raises(ValueError, match="quantile"):
        get_loss("expectile", quantile=1.0)
    with pytest.raises(ValueError, match="delta must be None"):
        get_loss(obj, delta=1.0)
    with pytest.raises(ValueError, match=r"shape \(n,\)"):
        QuantileLoss(0.5).value(np.zeros((3, 2, 2)))
    with pytest.raises(ValueError, match="R must have shape"):
        SquaredLoss().value(np.zeros((3, 2)))
    assert isinstance(HuberLoss(1.0), Loss) and "delta=1.0" in repr(HuberLoss(1.0))


# ---- the empirical (weighted) loss -----------------------------------------------------------
@pytest.mark.parametrize("loss", MATRIX_LOSSES, ids=ids)
def test_empirical_loss_weights_are_duplicated_rows_and_scale_free(loss):
    rng = np.random.default_rng(10)
    M, F = _sym(rng, 5, 2), _sym(rng, 5, 2)
    w = np.array([1, 3, 2, 1, 4])
    dup = EmpiricalLoss(loss, np.repeat(M, w, axis=0))
    wl = EmpiricalLoss(loss, M, w)
    np.testing.assert_allclose(wl.value(F), dup.value(np.repeat(F, w, axis=0)), rtol=1e-13)
    np.testing.assert_allclose(EmpiricalLoss(loss, M, 7.5 * w).value(F), wl.value(F),
                               rtol=1e-13)
    np.testing.assert_allclose(EmpiricalLoss(loss, M, np.ones(5)).value(F),
                               EmpiricalLoss(loss, M).value(F), rtol=1e-15)
    with pytest.raises(ValueError, match="sample_weight"):
        EmpiricalLoss(loss, M, np.array([1.0, 0.0, 1.0, 1.0, 1.0]))


@pytest.mark.parametrize("loss", MATRIX_LOSSES + [QuantileLoss(0.3), ExpectileLoss(0.7)],
                         ids=ids)
def test_empirical_loss_conjugate_and_prox(loss):
    """Fenchel-Young equality at Gamma = c grad l(F - M), and the prox of step L^* against
    CVXPY through the Moreau identity with the weighted primal expression."""
    rng = np.random.default_rng(11)
    scalar = loss.scalar_only
    M = rng.standard_normal(6) if scalar else _sym(rng, 6, 2)
    F = rng.standard_normal(6) if scalar else _sym(rng, 6, 2)
    w = rng.uniform(0.2, 3.0, 6)
    E = EmpiricalLoss(loss, M, w)
    G = E.grad(F)
    np.testing.assert_allclose(E.value(F) + E.conjugate(G), float(np.vdot(G, F)), rtol=1e-12,
                               atol=1e-14)
    # prox of step L^* = V - step prox_{L/step}(V/step); prox_{L/step} by CVXPY
    step = 0.8
    V = 0.5 * (rng.standard_normal(6) if scalar else _sym(rng, 6, 2))
    flat = (V / step).reshape(6, -1) if not scalar else V / step
    Mf = M.reshape(6, -1) if not scalar else M
    Z = cp.Variable(flat.shape)
    obj = E.cvxpy_expr(Z - Mf) / step + 0.5 * cp.sum_squares(Z - flat)
    cp.Problem(cp.Minimize(obj)).solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10,
                                       tol_feas=1e-10)
    Q = np.asarray(Z.value).reshape(V.shape)
    np.testing.assert_allclose(E.prox_conjugate(V, step) + step * Q, V, atol=2e-6)
    if loss.conjugate_is_smooth:
        eps = 1e-6
        H = rng.standard_normal(V.shape)
        if not scalar:
            H = 0.5 * (H + H.transpose(0, 2, 1))
        fd = (E.conjugate(G + eps * H) - E.conjugate(G - eps * H)) / (2 * eps)
        np.testing.assert_allclose(fd, float(np.vdot(E.conjugate_grad(G), H)), rtol=1e-6)


@pytest.mark.parametrize("loss", SCALAR_LOSSES, ids=ids)
def test_rescaled_is_the_homogeneity(loss):
    rng = np.random.default_rng(12)
    R = _batch(loss, rng, n=8, d=2, scale=2.0)
    for c in (0.25, 8.0):
        scaled, p = loss.rescaled(c)
        np.testing.assert_allclose(loss.value(c * R), c**p * scaled.value(R), rtol=1e-13)
