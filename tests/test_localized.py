"""LocalizedSELF (Ciliberto, Bach, Rudi: Algorithm 1, eq. 6, 9, 13, 20) and intra_locality
(eq. 21), against independent references: SELFEstimator, scikit-learn's KernelRidge, explicit
weights alpha built here from the formulas, fine grids, brute-force U-statistics."""

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from sklearn.kernel_ridge import KernelRidge
from sklearn.utils.estimator_checks import parametrize_with_checks

import psdsos
from psdsos.kernels import scale_bandwidth
from psdsos.structured import LocalizedSELF, SELFEstimator, intra_locality
from psdsos.structured.parts import Blocks, Patches2D, Windows1D


def _gauss(A, B, sigma):
    return np.exp(-cdist(A, B, "sqeuclidean") / (2 * sigma**2))


def _blocks_data(seed=0, n=12, P=3, k=2, dout=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, P * k))
    W = rng.normal(size=(k, dout))
    Y = np.concatenate([np.tanh(X[:, p * k:(p + 1) * k] @ W) for p in range(P)], axis=1)
    return X, Y, rng.normal(size=(5, P * k)), Blocks(P, k, dout)


@parametrize_with_checks([LocalizedSELF(), LocalizedSELF(kernel="linear", n_landmarks=2,
                                                        random_state=0)])
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


# ------------------------------------------------------------------------ one part = SELF
@pytest.mark.parametrize("output", ["euclidean", "orientation", "multiclass"])
@pytest.mark.parametrize("kernel", ["gaussian", "linear"])
def test_one_part_equals_self(output, kernel):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(15, 4))
    Xt = rng.normal(size=(6, 4))
    t = np.sin(X[:, 0]) + X[:, 1]
    y = {"euclidean": np.c_[t, X[:, 2]], "orientation": t,
         "multiclass": np.digitize(t, [-0.5, 0.5])}[output]
    kw = dict(kernel=kernel, sigma=1.5, lam=1e-2, output=output)
    a = LocalizedSELF(**kw).fit(X, y)
    b = SELFEstimator(**kw).fit(X, y)
    pa, pb = a.predict(Xt), b.predict(Xt)
    assert pa.shape == pb.shape
    if output == "multiclass":
        np.testing.assert_array_equal(pa, pb)
    else:
        # both solve the same n x n Cholesky system: agreement to rounding (cond ~ 1e3)
        np.testing.assert_allclose(pa, pb, rtol=1e-10, atol=1e-12)


# ---------------------------------------------- restriction + squared + blocks = KernelRidge
@pytest.mark.parametrize("kernel", ["gaussian", "linear"])
def test_restriction_blocks_equal_kernel_ridge_on_stacked_parts(kernel):
    X, Y, Xt, parts = _blocks_data()
    n, P = len(X), parts.n_parts
    lam, sigma = 1e-2, 0.8
    model = LocalizedSELF(kernel, sigma, lam=lam, parts=parts).fit(X, Y)
    Xs = parts.extract_inputs(X).reshape(n * P, -1)
    Ys = parts.extract_outputs(Y).reshape(n * P, -1)
    kr = (KernelRidge(alpha=n * P * lam, kernel="rbf", gamma=1 / (2 * sigma**2))
          if kernel == "gaussian" else KernelRidge(alpha=n * P * lam, kernel="linear"))
    kr.fit(Xs, Ys)
    ref = kr.predict(parts.extract_inputs(Xt).reshape(len(Xt) * P, -1))
    ref = ref.reshape(len(Xt), P * parts.output_size)
    np.testing.assert_allclose(model.predict(Xt), ref, rtol=1e-9, atol=1e-11)


# --------------------------------------------- universal, all pairs = |P| separate SELF fits
@pytest.mark.parametrize("output", ["euclidean", "orientation"])
def test_universal_all_pairs_equals_separate_self_fits(output):
    X, Y, Xt, parts = _blocks_data(seed=2, P=3, dout=1)
    if output == "orientation":
        Y = 2.0 * Y
    lam, sigma, P = 1e-2, 2.0, parts.n_parts
    model = LocalizedSELF("gaussian", sigma, lam=lam, parts=parts, output=output,
                          locality="universal").fit(X, Y)
    # block-diagonal K over the parts: (K0 + n|P| lam I) per part = SELF with lam' = |P| lam
    ref = np.column_stack([
        SELFEstimator("gaussian", sigma, lam=P * lam, output=output).fit(X, Y[:, p])
        .predict(Xt) for p in range(P)])
    np.testing.assert_allclose(model.predict(Xt), ref, rtol=1e-9, atol=1e-11)


def test_universal_overlapping_windows_average_separate_fits():
    rng = np.random.default_rng(3)
    X, Xt = rng.normal(size=(10, 6)), rng.normal(size=(4, 6))
    Y = np.cumsum(X, axis=1)
    parts = Windows1D(6, 3, stride=1, circular=True)
    lam, P = 1e-2, parts.n_parts
    model = LocalizedSELF("gaussian", "scale", lam=lam, parts=parts,
                          locality="universal").fit(X, Y)
    vals = np.stack([SELFEstimator("gaussian", "scale", lam=P * lam).fit(
        X, Y[:, parts.output_index[p]]).predict(Xt) for p in range(P)], axis=1)
    np.testing.assert_allclose(model.predict(Xt), parts.assemble(vals), rtol=1e-9,
                               atol=1e-11)


# ------------------------------------------------------------- explicit-alpha reference
def _explicit_alpha(model, X, Xt, locality, sigma_bar, sigma0):
    """alpha(x, p) (n_test, |P|, m) from eq. 9 built here with cdist."""
    parts = model.parts_
    ii, pp = model.aux_sample_, model.aux_part_
    P = parts.n_parts
    A = X[ii[:, None], parts.input_index[pp]]

    def joint(Xa, ia, pa):
        K = 0.0
        if locality in ("restriction", "both"):
            K = K + _gauss(Xa[ia[:, None], parts.input_index[pa]], A, sigma_bar)
        if locality in ("universal", "both"):
            K = K + _gauss(Xa[ia], X[ii], sigma0) * (pa[:, None] == pp[None, :])
        return K

    m = len(ii)
    K = joint(X, ii, pp)
    it = np.repeat(np.arange(len(Xt)), P)
    pt = np.tile(np.arange(P), len(Xt))
    V = joint(Xt, it, pt)
    alpha = np.linalg.solve(K + m * model.lam * np.eye(m), V.T).T
    return alpha.reshape(len(Xt), P, m)


@pytest.mark.parametrize("locality", ["restriction", "universal", "both"])
def test_predict_equals_explicit_alpha_reference_patches(locality):
    rng = np.random.default_rng(4)
    H = W = 6
    X = rng.normal(size=(5, H * W))
    Y = np.roll(X, 1, axis=1) + 0.1 * rng.normal(size=X.shape)
    Xt = rng.normal(size=(3, H * W))
    parts = Patches2D((H, W), 3, stride=2, circular=True)
    pw = rng.uniform(0.2, 1.0, parts.n_parts)
    model = LocalizedSELF("gaussian", "scale", lam=1e-3, parts=parts, locality=locality,
                          part_weights=pw, n_aux=60, random_state=0).fit(X, Y)
    ii, pp = model.aux_sample_, model.aux_part_
    sbar = scale_bandwidth(X[ii[:, None], parts.input_index[pp]])
    s0 = scale_bandwidth(X)
    alpha = _explicit_alpha(model, X, Xt, locality, sbar, s0)
    assert np.any(alpha < 0) or locality == "universal"  # signed weights
    eta = Y[ii[:, None], parts.output_index[pp]]  # (m, d_out)
    pi = pw / pw.sum()
    g = np.einsum("tpm,mo->tpo", alpha, eta)  # per-part scores
    num = np.zeros((len(Xt), H * W))
    den = np.zeros(H * W)
    for p in range(parts.n_parts):
        num[:, parts.output_index[p]] += pi[p] * g[:, p]
        den[parts.output_index[p]] += pi[p]
    np.testing.assert_allclose(model.part_scores(Xt)[..., 0], g, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(model.predict(Xt), num / den, rtol=1e-8, atol=1e-10)


def test_orientation_decoding_equals_fine_grid_signed_weights():
    rng = np.random.default_rng(5)
    L = 8
    X = rng.normal(size=(6, L))
    Y = np.arctan(X) + 0.3 * rng.normal(size=X.shape)
    Xt = rng.normal(size=(2, L))
    parts = Windows1D(L, 3, stride=1, circular=True)
    model = LocalizedSELF("gaussian", 0.7, lam=1e-4, parts=parts, output="orientation",
                          locality="both").fit(X, Y)
    ii, pp = model.aux_sample_, model.aux_part_
    alpha = _explicit_alpha(model, X, Xt, "both", 0.7, 0.7)
    assert np.any(alpha < 0)  # signed weights
    eta = Y[ii[:, None], parts.output_index[pp]]
    Z = model.predict(Xt)
    grid = np.linspace(-np.pi / 2, np.pi / 2, 20001)
    for t in range(len(Xt)):
        for u in range(L):
            F = np.zeros_like(grid)
            for p in range(parts.n_parts):
                pos = np.flatnonzero(parts.output_index[p] == u)
                if pos.size:
                    w = alpha[t, p] / parts.n_parts
                    F += np.sin(grid[:, None] - eta[None, :, pos[0]]) ** 2 @ w
            Fz = sum(alpha[t, p] / parts.n_parts @ np.sin(Z[t, u] - eta[:, pos2[0]]) ** 2
                     for p in range(parts.n_parts)
                     for pos2 in [np.flatnonzero(parts.output_index[p] == u)] if pos2.size)
            # the grid step 1.6e-4 bounds the grid minimum's excess by ~|F''| * h^2
            assert Fz <= F.min() + 1e-6 * (1 + np.abs(F).max())
            assert F[np.argmin(np.abs(grid - Z[t, u]))] <= F.min() + 1e-6 * (1 + np.abs(F).max())


def test_multiclass_hamming_decoding_equals_brute_force():
    rng = np.random.default_rng(6)
    L = 6
    X = rng.normal(size=(8, L))
    labels = np.array(["a", "b", "c"])
    Y = labels[np.digitize(X, [-0.4, 0.4])]
    Xt = rng.normal(size=(3, L))
    parts = Windows1D(L, 2, stride=1, circular=True)
    model = LocalizedSELF("gaussian", 1.0, lam=1e-3, parts=parts, output="multiclass").fit(X, Y)
    assert list(model.classes_) == ["a", "b", "c"]
    alpha = _explicit_alpha(model, X, Xt, "restriction", 1.0, 1.0)
    eta = Y[model.aux_sample_[:, None], parts.output_index[model.aux_part_]]
    Z = model.predict(Xt)
    for t in range(len(Xt)):
        for u in range(L):
            F = []
            for c in labels:  # Hamming objective of eq. 6 for each candidate label
                F.append(sum(alpha[t, p] @ (eta[:, np.flatnonzero(parts.output_index[p] == u)[0]]
                                            != c) for p in range(parts.n_parts)
                             if u in parts.output_index[p]))
            assert Z[t, u] == labels[int(np.argmin(F))]


# ----------------------------------------------------------------------------- Nystrom
@pytest.mark.parametrize("output", ["euclidean", "orientation"])
@pytest.mark.parametrize("locality", ["restriction", "both"])
def test_nystrom_all_landmarks_equals_exact(output, locality):
    X, Y, Xt, parts = _blocks_data(seed=7, n=8, P=3)
    kw = dict(kernel="gaussian", sigma=1.0, lam=1e-2, parts=parts, output=output,
              locality=locality)
    exact = LocalizedSELF(**kw).fit(X, Y)
    ny = LocalizedSELF(**kw, n_landmarks=exact.n_aux_, random_state=0).fit(X, Y)
    # same estimator up to the Cholesky jitter ~1e-14 m (relative), amplified by cond ~1e2
    np.testing.assert_allclose(ny.part_scores(Xt), exact.part_scores(Xt), rtol=1e-7,
                               atol=1e-9)
    np.testing.assert_allclose(ny.predict(Xt), exact.predict(Xt), rtol=1e-7, atol=1e-9)


def test_nystrom_low_rank_runs_and_is_seeded():
    X, Y, Xt, parts = _blocks_data(seed=8, n=20)
    kw = dict(sigma=1.0, lam=1e-3, parts=parts, n_aux=40, n_landmarks=15, random_state=3)
    a = LocalizedSELF(**kw).fit(X, Y).predict(Xt)
    b = LocalizedSELF(**kw).fit(X, Y).predict(Xt)
    np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------------ aux dataset
def test_auxiliary_dataset_all_pairs_and_sampling():
    X, Y, _, parts = _blocks_data(seed=9, n=10, P=3)
    model = LocalizedSELF(parts=parts).fit(X, Y)
    assert model.n_aux_ == 30
    pairs = set(zip(model.aux_sample_.tolist(), model.aux_part_.tolist(), strict=True))
    assert pairs == {(i, p) for i in range(10) for p in range(3)}
    win = Windows1D(6, 4, stride=2, circular=True)  # every entry in two of the 3 windows
    model = LocalizedSELF(parts=win, n_aux=500, part_weights=[0.0, 1.0, 3.0],
                          random_state=0).fit(X, Y)
    counts = np.bincount(model.aux_part_, minlength=3)
    assert counts[0] == 0  # pi(0) = 0: never sampled
    # p_j ~ (0, 1/4, 3/4): the count of part 2 is Binomial(500, 3/4), 5 sigma = 48
    assert abs(counts[2] - 375) < 48


# ------------------------------------------------------------------------ Algorithm 3
def _objective(model, X, Xt, Z, alpha, eta, loss):
    out = []
    pi = 1.0 / model.parts_.n_parts
    for t in range(len(Xt)):
        F = 0.0
        for p in range(model.parts_.n_parts):
            Lp = loss(Z[t][model.parts_.output_index[p]][None], eta).mean(axis=1)
            F += pi * alpha[t, p] @ Lp
        out.append(F)
    return np.array(out)


def test_algorithm3_converges_to_the_literal_eq6_minimizer_euclidean():
    """Algorithm 3 minimizes eq. 6 as written, sum_p pi_p sum_j alpha_j(x,p) ||z_p - eta_j||^2,
    whose minimizer (when the coefficient of z_u^2 is positive) is the alpha-weighted mean
    sum alpha eta / sum alpha per element -- not the closed form, which takes the coefficient
    of z_u^2 exactly (kernel ridge, as EuclideanSpace)."""
    X, Y, Xt, parts = _blocks_data(seed=10, n=10, P=2, dout=2)
    kw = dict(kernel="gaussian", sigma=1.0, lam=1e-1, parts=parts)
    exact = LocalizedSELF(**kw).fit(X, Y)
    sgd = LocalizedSELF(**kw, decode_method="sgd", max_iter=4000, random_state=0).fit(X, Y)
    alpha = _explicit_alpha(exact, X, Xt, "restriction", 1.0, 1.0)
    eta = Y[exact.aux_sample_[:, None], parts.output_index[exact.aux_part_]]
    den = alpha.sum(axis=2)  # (n_test, P); blocks: each element in one part
    assert np.all(den > 0.2)
    ref = (np.einsum("tpm,mo->tpo", alpha, eta) / den[..., None]).reshape(len(Xt), -1)
    Zs = sgd.predict(Xt)
    # steps 1/(2 A t_p): the iterate is a signed running mean over ~2000 samples per part,
    # std ~ spread(eta) (A / sum alpha) / sqrt(2000) ~ 0.03 (seeds 0-7: max error 0.035)
    np.testing.assert_allclose(Zs, ref, atol=0.1)
    assert np.max(np.abs(Zs - exact.predict(Xt))) > 0.1  # the two objectives differ here


def test_algorithm3_sphere_elements_stay_on_the_sphere():
    rng = np.random.default_rng(11)
    X = rng.normal(size=(6, 4))
    V = np.stack([np.cos(X), np.sin(X)], axis=-1)  # (n, 4, 2) unit vectors
    parts = Windows1D(4, 2, stride=1, circular=True)
    model = LocalizedSELF(sigma=1.0, lam=1e-2, parts=parts, output="sphere", max_iter=200,
                          random_state=0).fit(X, V)
    Z = model.predict(X[:2])
    assert Z.shape == (2, 4, 2)
    np.testing.assert_allclose(np.linalg.norm(Z, axis=-1), 1.0, atol=1e-12)
    with pytest.raises(ValueError, match="decode_method='closed_form'"):
        LocalizedSELF(parts=parts, output="sphere", decode_method="closed_form").fit(X, V)


# ------------------------------------------------------------------------ validation
def test_input_validation():
    X, Y, _, parts = _blocks_data(seed=12)
    with pytest.raises(ValueError, match="expect input_dim"):
        LocalizedSELF(parts=parts).fit(X[:, :-1], Y)
    with pytest.raises(ValueError, match="output dimension of the parts"):
        LocalizedSELF(parts=parts).fit(X, Y[:, :-1])
    with pytest.raises(ValueError, match="part_weights"):
        LocalizedSELF(parts=parts, part_weights=[1.0, -1.0, 1.0]).fit(X, Y)
    with pytest.raises(ValueError, match="length n_parts"):
        LocalizedSELF(parts=parts, part_weights=[1.0, 1.0]).fit(X, Y)
    with pytest.raises(ValueError, match="locality"):
        LocalizedSELF(parts=parts, locality="global").fit(X, Y)
    with pytest.raises(ValueError, match="n_landmarks must be <= n_aux_"):
        LocalizedSELF(parts=parts, n_landmarks=10**4).fit(X, Y)
    with pytest.raises(ValueError, match="parts of LocalizedSELF"):
        LocalizedSELF(parts="patches").fit(X, Y)
    with pytest.raises(ValueError, match="NaN|infinity|finite"):
        LocalizedSELF(parts=parts).fit(X, np.where(Y > 0, np.nan, Y))
    model = LocalizedSELF(parts=parts).fit(X, Y)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :3])


def test_callable_part_weights_and_images():
    rng = np.random.default_rng(13)
    X = rng.normal(size=(6, 4, 4))
    Y = X**2
    parts = Patches2D((4, 4), 2, stride=2)
    w = lambda A: np.ones((len(A), parts.n_parts))  # noqa: E731
    a = LocalizedSELF(sigma=1.0, parts=parts, part_weights=w).fit(X, Y)
    b = LocalizedSELF(sigma=1.0, parts=parts).fit(X, Y)
    assert a.predict(X[:2]).shape == (2, 4, 4)
    np.testing.assert_allclose(a.predict(X[:2]), b.predict(X[:2]), rtol=1e-12)
    with pytest.raises(ValueError, match="callable part_weights"):
        a.save("unused.npz")


# ------------------------------------------------------------------------ save / load
@pytest.mark.parametrize("case", ["exact", "nystrom", "multiclass", "both_patches"])
def test_save_load_roundtrip(tmp_path, case):
    rng = np.random.default_rng(14)
    if case == "both_patches":
        X = rng.normal(size=(5, 36))
        Y = np.roll(X, 2, axis=1)
        model = LocalizedSELF(sigma=2.0, parts=Patches2D((6, 6), 3, stride=3),
                              locality="both", output="orientation",
                              part_weights=np.arange(1.0, 5.0))
    else:
        X, Y, _, parts = _blocks_data(seed=14)
        if case == "multiclass":
            Y = np.where(Y > 0, "up", "down")
        model = LocalizedSELF("linear" if case == "exact" else "gaussian", 1.0, parts=parts,
                              output="multiclass" if case == "multiclass" else "euclidean",
                              n_aux=25, random_state=0,
                              n_landmarks=10 if case == "nystrom" else None)
    model.fit(X, Y)
    model.save(tmp_path / "m")
    back = psdsos.load(tmp_path / "m.npz")
    Xt = X[:3] + 0.05
    np.testing.assert_array_equal(back.predict(Xt), model.predict(Xt))


# ------------------------------------------------------------------------ eq. 25 factor
def test_eq25_factor_is_one_over_parts_for_20x20_patches_stride_5():
    """Each pixel lies in 16 patches, so the mean over parts of G equals eq. 24: the
    factor 16/|P| printed in eq. 25 is 16 times too large (the right factor is 1/|P|)."""
    rng = np.random.default_rng(15)
    H, W = 40, 45
    parts = Patches2D((H, W), 20, stride=5)
    assert np.all(parts.coverage() == 16)
    z, y = rng.uniform(-np.pi, np.pi, (2, H * W))
    eq24 = np.mean(np.sin(z - y) ** 2)
    G = np.mean(np.sin(z[parts.output_index] - y[parts.output_index]) ** 2, axis=1)
    np.testing.assert_allclose(G.sum() / parts.n_parts, eq24, rtol=1e-13)
    assert abs(16 * G.sum() / parts.n_parts - eq24) > 10 * eq24


# ------------------------------------------------------------------------ intra_locality
def _brute_C(X, parts, kern):
    Xp = parts.extract_inputs(X)
    n, P, _ = Xp.shape
    C = np.zeros((P, P))
    for p in range(P):
        for q in range(P):
            same = np.mean([kern(Xp[i, p][None], Xp[i, q][None])[0, 0] ** 2 for i in range(n)])
            cross = np.mean([kern(Xp[i, p][None], Xp[j, q][None])[0, 0] ** 2
                             for i in range(n) for j in range(n) if i != j])
            C[p, q] = same - cross
    return C


@pytest.mark.parametrize("kernel", ["linear", "gaussian"])
def test_intra_locality_equals_brute_force_u_statistic(kernel):
    rng = np.random.default_rng(16)
    X = rng.normal(size=(7, 8))
    parts = Windows1D(8, 3, stride=2, circular=True)
    if kernel == "linear":
        kern = lambda A, B: A @ B.T  # noqa: E731
        C = intra_locality(X, parts, "linear")
    else:
        kern = lambda A, B: _gauss(A, B, 1.3)  # noqa: E731
        C = intra_locality(X, parts, "gaussian", 1.3)
    np.testing.assert_allclose(C, _brute_C(X, parts, kern), rtol=1e-10, atol=1e-12)


def test_intra_locality_eq23_linear_kernel_matches_exp_decay():
    """x ~ N(0, M(gamma) kron I_k), M_pq = exp(-gamma |p-q| / |P|) (eq. 23): for the linear
    kernel C_pq = k (k + 1) M_pq^2, so the normalized C_pq is exp(-2 gamma |p-q| / |P|).
    The estimate's standard deviation is about 2 sqrt(2 / (n k)) (dominated by the variance
    of <x_p, x_q>^2 / k^2); with n = 400, k = 25 that is 0.028, and the tolerance is 5 of it."""
    rng = np.random.default_rng(17)
    P, k, n, gamma = 8, 25, 400, 4.0
    d = np.abs(np.subtract.outer(np.arange(P), np.arange(P))) / P
    M = np.exp(-gamma * d)
    Lc = np.linalg.cholesky(M)
    X = np.einsum("pq,nqk->npk", Lc, rng.normal(size=(n, P, k))).reshape(n, P * k)
    C = intra_locality(X, Blocks(P, k, 1), "linear", normalize=True)
    np.testing.assert_allclose(C, np.exp(-2 * gamma * d), atol=5 * 2 * np.sqrt(2 / (n * k)))


@pytest.mark.parametrize("kernel", ["linear", "gaussian"])
def test_intra_locality_rows_and_normalization(kernel):
    rng = np.random.default_rng(18)
    X = rng.normal(size=(9, 12))
    parts = Windows1D(12, 4, stride=2, circular=True)
    C = intra_locality(X, parts, kernel, 2.0)
    np.testing.assert_allclose(intra_locality(X, parts, kernel, 2.0, rows=[3, 1]), C[[3, 1]],
                               rtol=1e-12, atol=1e-14)
    dg = np.sqrt(np.diag(C))
    np.testing.assert_allclose(intra_locality(X, parts, kernel, 2.0, rows=[2], normalize=True),
                               C[[2]] / dg[2] / dg[None, :], rtol=1e-12)
    with pytest.raises(ValueError, match="rows"):
        intra_locality(X, parts, kernel, 2.0, rows=[99])


def test_aux_sampling_memory_is_linear_in_m():
    """Regression: the sampling of p_j ~ pi(.|x) once built (m, |P|) arrays (2.9 GB at the
    paper's scale, m = 30,000 and |P| = 12,288); now O(m + n |P|)."""
    import tracemalloc

    from psdsos.structured._localized import _sample_aux

    n, P, m = 4, 3000, 20000
    pi = np.random.default_rng(0).uniform(size=(n, P))
    pi /= pi.sum(axis=1, keepdims=True)
    tracemalloc.start()
    ii, pp = _sample_aux(m, pi, n, P, np.random.default_rng(1))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 20 * m * 8 + 4 * n * P * 8  # an (m, P) array would be 480 MB
    assert ii.shape == pp.shape == (m,) and pp.min() >= 0 and pp.max() < P


def test_part_weights_leaving_entries_undetermined_raise():
    X, Y, _, parts = _blocks_data(seed=19)
    with pytest.raises(ValueError, match="zero weight to every part"):
        LocalizedSELF(parts=parts, part_weights=[0.0, 1.0, 1.0]).fit(X, Y)
    # overlapping windows: an entry covered by another part of positive weight is fine
    W = Windows1D(6, 3, stride=1, circular=True)
    LocalizedSELF(parts=W, part_weights=[0, 1, 1, 1, 1, 1]).fit(X, Y)


def test_box_constrained_euclidean_is_the_clipped_closed_form():
    """The element loss is separable with a positive coefficient of z_u^2, so the box
    constraint is imposed exactly by clipping the unconstrained minimizer."""
    from psdsos.structured import EuclideanSpace

    X, Y, Xt, parts = _blocks_data(seed=20)
    Yb = np.clip(Y, -0.3, 0.3)
    free = LocalizedSELF(sigma=1.0, lam=1e-4, parts=parts).fit(X, Yb).predict(Xt * 2)
    box = LocalizedSELF(sigma=1.0, lam=1e-4, parts=parts,
                        output=EuclideanSpace("box", lo=-0.3, hi=0.3)).fit(X, Yb).predict(Xt * 2)
    assert np.any(np.abs(free) > 0.3)  # the constraint is active somewhere
    np.testing.assert_allclose(box, np.clip(free, -0.3, 0.3), rtol=1e-13, atol=1e-15)


def test_changing_decode_method_after_fit_asks_for_a_refit():
    X, Y, Xt, parts = _blocks_data(seed=21)
    model = LocalizedSELF(sigma=1.0, parts=parts).fit(X, Y)
    model.set_params(decode_method="sgd")
    with pytest.raises(ValueError, match="refit"):
        model.predict(Xt)
    model.fit(X, Y)
    assert model.predict(Xt).shape == (len(Xt), Y.shape[1])


def test_algorithm3_with_a_user_output_space():
    """An OutputSpace object with project() and loss_gradient(Z, Y) is decoded by Algorithm
    3: here the absolute loss on [0, 1] (a weighted median per entry for positive weights)."""
    from psdsos.structured import OutputSpace

    class AbsUnit(OutputSpace):
        name = "abs_unit"
        decode_methods = ()

        def check_Y(self, Y, name="Y"):
            A = np.asarray(Y, dtype=np.float64)
            if A.ndim != 1 or np.any((A < 0) | (A > 1)):
                raise ValueError(f"{name} must be values in [0, 1]")
            return A

        def loss(self, Y_true, Y_pred):
            return np.abs(np.asarray(Y_true) - np.asarray(Y_pred))

        def loss_gradient(self, Z, Y):
            return np.sign(Z - Y)

        def project(self, Z):
            return np.clip(Z, 0.0, 1.0)

    rng = np.random.default_rng(22)
    X = rng.normal(size=(8, 4))
    Y = 1 / (1 + np.exp(-X))
    parts = Windows1D(4, 2, stride=1, circular=True)
    model = LocalizedSELF(sigma=1.0, lam=1e-2, parts=parts, output=AbsUnit(), max_iter=300,
                          random_state=0).fit(X, Y)
    Z = model.predict(X[:3])
    assert Z.shape == (3, 4) and np.all((Z >= 0) & (Z <= 1))
    with pytest.raises(ValueError, match="cannot save"):
        model.save("unused.npz")


def test_algorithm3_warns_when_tol_is_not_reached():
    from sklearn.exceptions import ConvergenceWarning

    X, Y, Xt, parts = _blocks_data(seed=23)
    model = LocalizedSELF(sigma=1.0, parts=parts, decode_method="sgd", max_iter=3, tol=1e-12,
                          random_state=0).fit(X, Y)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        model.predict(Xt)
    model.set_params(max_iter=4000, tol=0.5)  # the loose tol is met: no warning
    model.fit(X, Y)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model.predict(Xt)
