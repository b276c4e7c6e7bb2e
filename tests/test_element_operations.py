"""Contract of the optional per-element operations of the output spaces (the ones
LocalizedSELF uses), checked over every registered space that declares them through
``OutputSpace.supports``: projections land in the space, element losses are >= 0 and 0 at
the target, ``loss_gradient`` passes a Taylor check along the space, and the closed-form
element decoding returns the element of smallest weighted loss."""

from __future__ import annotations

import numpy as np
import pytest

from psdsos.structured import EuclideanSpace, OutputSpace, get_output_space, output_spaces

CAPABILITIES = ("element_closed_form", "element_sgd")


def _unit(A):
    return A / np.linalg.norm(A, axis=-1, keepdims=True)


#: Training elements (N, *element_shape) of each space that declares element operations.
SAMPLES = {
    "euclidean": lambda rng: rng.normal(size=30),
    "euclidean_box": lambda rng: rng.uniform(-0.5, 0.5, size=30),
    "orientation": lambda rng: rng.uniform(-1.5, 1.5, size=30),
    "multiclass": lambda rng: rng.choice(np.array(["a", "b", "c"]), size=30),
    "sphere": lambda rng: _unit(rng.normal(size=(30, 3))),
}


def _spaces():
    out = [(name, get_output_space(name)) for name in sorted(output_spaces())]
    out.append(("euclidean_box", EuclideanSpace("box", lo=-0.5, hi=0.5)))
    return out


def _declared(capability):
    return [pytest.param(space, SAMPLES[name], id=name) for name, space in _spaces()
            if space.supports(capability)]


def test_every_space_that_declares_element_operations_has_a_sample():
    for name, space in _spaces():
        assert all(isinstance(space.supports(c), bool) for c in CAPABILITIES)
        if any(space.supports(c) for c in CAPABILITIES):
            assert name in SAMPLES, f"add training elements of {name!r} to SAMPLES"


def test_the_base_class_declares_no_element_operations():
    class Bare(OutputSpace):
        name = "bare"

    space = Bare()
    assert not any(space.supports(c) for c in (*CAPABILITIES, "project", "loss_gradient"))
    with pytest.raises(NotImplementedError):
        space.loss_gradient(np.zeros(2), np.zeros(2))
    with pytest.raises(NotImplementedError):
        space.element_embed(np.zeros(2))


def _loss_along(space, z, v, y, t):
    return space.element_loss(space.element_project((z + t * v)[None])[0], y)


def _weighted_loss(space, w, z, E):
    return float(w @ space.element_loss(np.asarray([z] * len(E)), E))


@pytest.mark.parametrize("space, sample", _declared("element_sgd"))
def test_element_sgd_contract(space, sample):
    rng = np.random.default_rng(0)
    E = sample(rng)
    V = space.element_fit(E)
    assert V.shape == E.shape
    # projections land in the space
    Z = space.element_project(V + rng.normal(size=V.shape))
    space.element_check(Z, "Z")
    np.testing.assert_allclose(space.element_project(V), V, atol=1e-12)
    # losses: >= 0, 0 at the target, broadcast over leading axes
    L = space.element_loss(Z[:, None], V[None, :])
    assert L.shape == (len(V), len(V)) and np.all(L >= 0)
    np.testing.assert_allclose(space.element_loss(V, V), 0.0, atol=1e-20)
    # Taylor check of loss_gradient along curves z(t) = project(z + t v), v tangent
    el = V.shape[1:]
    for i in range(5):
        z, y = V[i], V[(i + 7) % len(V)]  # z inside the space (away from a box face)
        v = rng.normal(size=el)
        if el:  # the sphere: v tangent at z
            v = v - (v @ z) * z
        g = space.loss_gradient(z, y)
        h = 1e-6
        num = (_loss_along(space, z, v, y, h) - _loss_along(space, z, v, y, -h)) / (2 * h)
        np.testing.assert_allclose(np.sum(g * v), num, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("space, sample", _declared("element_closed_form"))
def test_element_closed_form_contract(space, sample):
    rng = np.random.default_rng(1)
    E = sample(rng)
    V = space.element_fit(E)
    e = space.element_embed_dim()
    Phi = space.element_embed(V)
    assert Phi.shape == (*V.shape, e)
    # one element with weight one decodes to itself
    Z = space.element_decode(Phi[None], np.ones((1, len(V))))
    same = Z[0] == E if E.dtype.kind in "OUS" else np.isclose(Z[0], E, atol=1e-12)
    assert np.all(same)
    # positive weights: the decoded element has the smallest weighted loss among the
    # training elements (the decoding minimizes sum_j w_j L(z, eta_j))
    for _ in range(5):
        w = rng.uniform(size=len(V))
        c = (w[:, None] * Phi).sum(axis=0)
        z = space.element_decode(c[None, None], np.full((1, 1), w.sum()))[0, 0]
        best = min(_weighted_loss(space, w, x, E) for x in E)
        assert _weighted_loss(space, w, z, E) <= best + 1e-12
