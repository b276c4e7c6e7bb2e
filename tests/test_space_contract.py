"""The contract of every registered output space (in the manner of pymanopt's
``_manifold_tests.py``): decodings and projections land in the space, losses are >= 0 and 0
at the target (symmetric where the space says so), gradients pass a Taylor check, the
configuration round-trips through JSON.

``check_output_space(space, Y, Y2, rng)`` is the contract itself; it is parametrized here
over every registered space, with example outputs per name (``EXAMPLES``), and called on the
out-of-package plug-ins by ``test_plugin_spaces.py``.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from psdsos.structured import OutputSpace, get_output_space, output_spaces

N = 6


def _spd(rng, d=2):
    A = rng.normal(size=(N, d, d))
    return A @ np.swapaxes(A, 1, 2) + 0.5 * np.eye(d)


def _unit(rng, k=3):
    Y = rng.normal(size=(N, k))
    return Y / np.linalg.norm(Y, axis=1, keepdims=True)


def _ranks(rng, k=3):
    perms = np.array(list(itertools.permutations(range(k))))
    return perms[rng.integers(0, len(perms), N)]


#: Example outputs (a batch of N) of each built-in space, in its Y format.
EXAMPLES = {
    "euclidean": lambda rng: rng.normal(size=(N, 3)),
    "spd": _spd,
    "spd_logeuclidean": _spd,
    "bures": _spd,
    "sphere": _unit,
    "fisher_simplex": lambda rng: rng.dirichlet(np.ones(3), N),
    "orientation": lambda rng: rng.uniform(-np.pi / 2, np.pi / 2, N),
    "multiclass": lambda rng: rng.integers(0, 3, N),
    "multilabel": lambda rng: rng.integers(0, 2, (N, 4)),
    "ranking": _ranks,
    "ordinal": lambda rng: rng.integers(0, 4, N),
}


def _offers(space, capability):
    """Whether the space offers an optional operation (``OutputSpace.supports`` where the
    contract declares it, else the method's presence)."""
    supports = getattr(space, "supports", None)
    if supports is not None:
        return bool(supports(capability))
    if capability == "project":
        return type(space).project is not OutputSpace.project
    return callable(getattr(space, capability, None))


def _element_loss(space, Z, Y):
    f = getattr(space, "element_loss", None)
    return f(Z, Y) if f is not None else space.loss(Y, Z)


def _tangent(space, Z, U, h=1e-7):
    """U made tangent to the space at Z: the derivative of the space's projection along U
    (central difference; U itself for spaces without a projection)."""
    if _offers(space, "element_sgd"):
        P = space.element_project
    elif _offers(space, "project"):
        P = space.project
    else:
        return U
    return (np.asarray(P(Z + h * U)) - np.asarray(P(Z - h * U))) / (2.0 * h)


def _taylor_slope(f, x, g, u):
    """Slope of log |f(x + t u) - f(x) - t <g, u>| against log t (2 for a gradient); None
    when the remainder is at rounding level (f quadratic or linear along u)."""
    ts = np.logspace(-4, -2, 5)
    f0 = f(x)
    rem = np.array([abs(f(x + t * u) - f0 - t * np.sum(g * u)) for t in ts])
    if rem.max() < 1e-12 * max(1.0, abs(f0)):
        return None
    return float(np.polyfit(np.log(ts), np.log(rem), 1)[0])


def _ambient(space, Y, rng):
    """Ambient points near Y (what kernel ridge predicts): positions for label spaces,
    symmetric perturbations for matrices."""
    A = np.asarray(space.encode(Y) if space.is_classification else Y, dtype=np.float64)
    noise = 0.1 * rng.normal(size=A.shape)
    if A.ndim == 3:
        noise = 0.5 * (noise + np.swapaxes(noise, 1, 2))
    return A + noise


def check_output_space(space, Y, Y2, rng):
    """The contract of the output space ``space`` on two batches Y, Y2 of its outputs."""
    name = space.name
    assert output_spaces()[name] is type(space)
    assert len(space.decode_methods) >= 1
    Yc = space.check_Y(Y, "Y")
    Y2c = space.check_Y(Y2, "Y")
    # losses: >= 0, 0 at the target, symmetric where declared
    L = space.loss(Yc, Y2c)
    assert L.shape == (len(Yc),) and np.all(L >= 0), name
    np.testing.assert_allclose(space.loss(Yc, Yc), 0.0, atol=1e-8, err_msg=name)
    if space.symmetric_loss:
        np.testing.assert_allclose(space.loss(Y2c, Yc), L, rtol=1e-8, atol=1e-12,
                                   err_msg=name)
    # decoding (every method) lands in the space
    space.fit(Yc)
    alpha = rng.uniform(0.1, 1.0, size=(3, len(Yc)))
    for method in space.decode_methods:
        P = space.decode(alpha, method=method)
        assert len(P) == 3, (name, method)
        space.check_Y(P, "P")
        assert np.all(space.loss(P, P) <= 1e-8), (name, method)
    # projection of ambient predictions (KRLS) lands in the space
    if _offers(space, "project"):
        P = space.project(_ambient(space, Yc, rng))
        space.check_Y(P, "P")
    # loss gradient: Taylor check at Y2 against Y, along a random tangent direction
    if _offers(space, "loss_gradient"):
        Z = np.asarray(Y2c, dtype=np.float64)
        T = np.asarray(Yc, dtype=np.float64)
        G = np.asarray(space.loss_gradient(Z, T), dtype=np.float64)
        assert G.shape == Z.shape, name
        U = rng.normal(size=Z.shape)
        if U.ndim == 3:
            U = 0.5 * (U + np.swapaxes(U, 1, 2))
        U = _tangent(space, Z, U)
        slope = _taylor_slope(lambda z: float(np.sum(_element_loss(space, z, T))), Z, G, U)
        assert slope is None or slope > 1.8, (name, slope)
    # the configuration round-trips through JSON
    cfg = space.to_config()
    clone = type(space).from_config(json.loads(json.dumps(cfg)))
    assert type(clone) is type(space) and clone.to_config() == cfg, name
    assert get_output_space(name.upper()).to_config() == type(space)().to_config()


@pytest.mark.parametrize("name", sorted(output_spaces()))
def test_output_space_contract(name):
    rng = np.random.default_rng(0)
    example = EXAMPLES[name]
    check_output_space(get_output_space(name), example(rng), example(rng), rng)


def test_every_registered_space_has_an_example():
    """A space registered in psdsos comes with example outputs here (its contract runs)."""
    missing = sorted(set(output_spaces()) - set(EXAMPLES))
    assert not missing, f"add example outputs to EXAMPLES for {missing}"
