"""The sphere's one geodesic distance and one zero-row rule, shared by SphereSpace (SELF,
KRLS) and LocalizedSELF's Algorithm 3 (its per-element operations)."""

from __future__ import annotations

import numpy as np

from psdsos.geometry import sphere_distance
from psdsos.structured import LocalizedSELF
from psdsos.structured.parts import Windows1D
from psdsos.structured.spaces import SphereSpace


def test_zero_rows_project_to_the_first_basis_vector_everywhere():
    space = SphereSpace()
    Z = np.zeros((2, 3, 4))
    Z[0, 1] = [0.0, 3.0, 0.0, 4.0]
    e1 = np.array([1.0, 0.0, 0.0, 0.0])
    P = space.element_project(Z)
    np.testing.assert_array_equal(P[1], np.tile(e1, (3, 1)))
    np.testing.assert_array_equal(P[0, 0], e1)
    np.testing.assert_allclose(P[0, 1], [0.0, 0.6, 0.0, 0.8], rtol=1e-15)
    np.testing.assert_array_equal(space.project(Z.reshape(-1, 4)), P.reshape(-1, 4))


def test_one_geodesic_distance_for_loss_element_loss_and_geometry():
    rng = np.random.default_rng(0)
    Y = rng.normal(size=(50, 3))
    Y /= np.linalg.norm(Y, axis=1, keepdims=True)
    Z = rng.normal(size=(50, 3))
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    # nearly equal and nearly antipodal pairs, where arccos of the inner product is inaccurate
    Z[:5] = Y[:5] + 1e-9 * np.eye(3)[0]
    Z[5:10] = -Y[5:10] + 1e-9 * np.eye(3)[1]
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    space = SphereSpace().fit(Y)
    d2 = sphere_distance(Y, Z) ** 2
    # the same formula; the checks of sphere_distance and loss renormalize their inputs
    for got in (space.element_loss(Y, Z), space.element_loss(Z, Y), space.loss(Y, Z)):
        np.testing.assert_allclose(got, d2, rtol=1e-7)
    assert np.all(d2[:5] > 0)  # arccos(clip(<y, z>)) rounds these to 0


def test_sphere_loss_gradient_is_the_ambient_gradient():
    rng = np.random.default_rng(1)
    y = rng.normal(size=4)
    y /= np.linalg.norm(y)
    z = rng.normal(size=4)
    z /= np.linalg.norm(z)
    space = SphereSpace()
    g = space.loss_gradient(z, y)
    np.testing.assert_allclose(g, -2 * np.arccos(z @ y) / np.sqrt(1 - (z @ y) ** 2) * y,
                               rtol=1e-12)
    # its tangent part is the gradient of the loss at z / ||z|| (a Taylor check)
    h = 1e-6

    def f(w):
        return space.element_loss(w / np.linalg.norm(w), y)

    num = np.array([(f(z + h * e) - f(z - h * e)) / (2 * h) for e in np.eye(4)])
    np.testing.assert_allclose(g - (g @ z) * z, num, rtol=1e-6, atol=1e-8)


def test_localized_sphere_decoding_uses_the_shared_operations():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(6, 4))
    V = np.stack([np.cos(X), np.sin(X)], axis=-1)
    model = LocalizedSELF(sigma=1.0, lam=1e-2, parts=Windows1D(4, 2, circular=True),
                          output="sphere", max_iter=50, random_state=0).fit(X, V)
    assert model.output_space_.supports("element_sgd")
    assert not model.output_space_.supports("element_closed_form")
    Z = model.predict(X[:2])
    np.testing.assert_allclose(np.linalg.norm(Z, axis=-1), 1.0, atol=1e-12)
