"""The contract every registered loss satisfies (in the manner of pymanopt's
``_manifold_tests.py``), on scalar residuals and, unless ``scalar_only``, on symmetric matrix
residuals: the loss is >= 0 and 0 at the target; the conjugate satisfies the Fenchel-Young
inequality, with equality at the gradient; the prox of the conjugate satisfies the Moreau
identity (the point it splits off is a minimizer, and with the rest it is a Fenchel-Young
pair); the CVXPY expression has the numpy value.  Each loss is built from the parameters it
declares (``Loss.parameters``).

``check_loss_contract`` is also run on the plug-in loss of
tests/test_plugin_kernels_losses.py.
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from psdsos.losses import LOSSES, get_loss, loss_names

#: Every registered loss when this module is collected.
NAMES = loss_names()


def _sample_value(param):
    """A valid value of a declared parameter: its default, else inside its interval."""
    if param.default is not None:
        return param.default
    if param.upper is not None:
        lo = 0.0 if param.lower is None else param.lower
        return lo + 0.3 * (param.upper - lo)
    return (0.0 if param.lower is None else param.lower) + 0.7


def _loss(name):
    return get_loss(name, **{p.name: _sample_value(p) for p in LOSSES[name].parameters})


def _inner(S, R):
    """Per-sample <S_i, R_i>."""
    S, R = np.asarray(S), np.asarray(R)
    return np.sum(S * R, axis=tuple(range(1, R.ndim))) if R.ndim > 1 else S * R


def _residuals(loss, rng, n=12, d=3, scale=2.0):
    """Scalar residuals, and symmetric d x d ones unless the loss takes scalars only."""
    out = [scale * rng.standard_normal(n)]
    if not loss.scalar_only:
        A = scale * rng.standard_normal((n, d, d))
        out.append(0.5 * (A + A.transpose(0, 2, 1)))
    return out


def _tol(*arrays_):
    return 1e-9 * max(1.0, *(float(np.max(np.abs(a))) for a in arrays_))


def check_values(loss, R):
    """l >= 0, l = 0 at the target (residual 0)."""
    v = loss.value(R)
    assert v.shape == (R.shape[0],)
    assert np.all(v >= 0)
    np.testing.assert_array_equal(loss.value(np.zeros_like(R)), 0.0)


def check_fenchel_young(loss, R, V):
    """l(R) + l^*(S) >= <S, R> for S in the domain of l^* (S = the projection of V on it,
    prox of 0 * l^*), with equality at S = grad l(R)."""
    S = loss.prox_conjugate(V, 0.0)
    lhs = loss.value(R) + loss.conjugate(S)
    assert np.all(np.isfinite(loss.conjugate(S)))
    assert np.all(lhs >= _inner(S, R) - _tol(lhs, _inner(S, R)))
    G = loss.grad(R)
    eq = loss.value(R) + loss.conjugate(G)
    np.testing.assert_allclose(eq, _inner(G, R), rtol=1e-9, atol=_tol(eq))


def check_moreau(loss, V, eta, rng):
    """S = prox_{eta l^*}(V) and R = (V - S) / eta (= prox_{l / eta}(V / eta) by the Moreau
    identity V = prox_{eta l^*}(V) + eta prox_{l / eta}(V / eta)): S is a subgradient of l at
    R (Fenchel-Young equality) and S minimizes eta l^*(.) + |. - V|^2 / 2 against points of
    the domain nearby."""
    S = loss.prox_conjugate(V, eta)
    R = (V - S) / eta
    fy = loss.value(R) + loss.conjugate(S)
    np.testing.assert_allclose(fy, _inner(S, R), rtol=1e-8, atol=_tol(fy, V))

    def objective(T):
        D = (T - V).reshape(len(V), -1)
        return eta * loss.conjugate(T) + 0.5 * np.sum(D * D, axis=1)

    best = objective(S)
    for _ in range(5):
        T = loss.prox_conjugate(S + 0.1 * rng.standard_normal(S.shape), 0.0)
        if T.ndim > 1:
            T = 0.5 * (T + T.transpose(0, 2, 1))
        ok = np.isfinite(loss.conjugate(T))
        assert np.all(best[ok] <= objective(T)[ok] + _tol(best))


def check_cvxpy(loss, R):
    """The CVXPY expression of constant residuals is the numpy value: scalars directly,
    matrices as rows of upper triangles with multiplicities 1 (diagonal) and 2 (off it)."""
    if R.ndim == 1:
        expr = loss.cvxpy_expr(cp.Constant(R))
    else:
        iu, ju = np.triu_indices(R.shape[1])
        expr = loss.cvxpy_expr(cp.Constant(R[:, iu, ju]),
                               multiplicity=np.where(iu == ju, 1.0, 2.0))
    np.testing.assert_allclose(np.asarray(expr.value).ravel(), loss.value(R), rtol=1e-9,
                               atol=1e-12)


def check_loss_contract(loss, rng):
    """Every check of this module on one loss object."""
    for R in _residuals(loss, rng):
        V = _residuals(loss, rng)[R.ndim > 1]
        check_values(loss, R)
        check_fenchel_young(loss, R, V)
        for eta in (0.3, 1.0, 5.0):
            check_moreau(loss, V, eta, rng)
        check_cvxpy(loss, R)


@pytest.mark.parametrize("name", NAMES)
def test_contract(name):
    check_loss_contract(_loss(name), np.random.default_rng(0))


@pytest.mark.parametrize("name", NAMES)
def test_declared_parameters_build_the_loss(name):
    loss = _loss(name)
    assert type(loss) is LOSSES[name] and loss.name == name
    params = loss.params()
    assert params.pop("loss") == name
    assert set(params) == {p.name for p in loss.parameters}
    assert get_loss(name, **params).params() == loss.params()


_finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)


@pytest.mark.parametrize("name", NAMES)
@given(r=arrays(np.float64, st.integers(1, 6), elements=_finite),
       v=arrays(np.float64, 6, elements=_finite))
def test_fenchel_young_on_any_scalar_residuals(name, r, v):
    loss = _loss(name)
    check_values(loss, r)
    check_fenchel_young(loss, r, v[: len(r)])
