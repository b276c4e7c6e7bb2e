r"""Fast re-solves of a DPP problem built once with ``cp.Parameter`` and solved many times.

CVXPY compiles a DPP problem once, but each ``problem.solve`` still maps the parameter
values to the solver data through its generic machinery (``ParamConeProg.apply_parameters``,
sparse matrix assembly, a fresh solver object, the unpacking of the solution); for the small
decoding programs of :mod:`psdsos.structured` that overhead is larger than the solver
itself.  :func:`solve_parametric` removes it for Clarabel:

* once per problem: ``problem.get_problem_data`` gives the parametric program
  (``data[cvxpy.settings.PARAM_PROB]``); its tensors give the affine map from the
  parameter vector :math:`\theta` (with a trailing 1) to the solver data -- ``q`` and the
  objective offset, ``b``, and the nonzero values of ``A`` and of the upper triangle of
  ``P`` -- as sparse matrices.  The map is checked against the data CVXPY itself produced
  at the current parameter values (any mismatch, unsupported reduction or solver: the
  problem permanently uses the ordinary ``problem.solve``);
* per solve: the chain's ``update_parameters`` (the reductions that transform parameters,
  e.g. symmetric ones), one sparse mat-vec per data block, ``DefaultSolver.update`` of a
  persistent Clarabel solver (the sparsity pattern is fixed, so the KKT symbolic
  factorization and allocations are reused; when Clarabel refuses data updates -- an
  active presolve or chordal decomposition -- a new solver is built from the mapped data)
  and ``problem.unpack_results`` -- CVXPY's own inversion of the chain, so status, value
  and primal values are set as by ``problem.solve``.  Dual values are not recovered (for
  PSD constraints that costs as much as the rest of a re-solve): they are set to None.

The solver options are those of :func:`psdsos.solvers.solve_cvxpy`, translated by CVXPY's
own Clarabel interface, unchanged; ``problem.solve`` itself (``warm_start=True``) also
re-solves by ``DefaultSolver.update`` of the solver it cached when Clarabel allows it.
Status handling is that of ``solve_cvxpy``: ``optimal_inaccurate`` warns
(:class:`~psdsos.solvers.InaccurateSolutionWarning`), anything else not optimal raises
:class:`~psdsos.solvers.SolverStatusError`.
"""

from __future__ import annotations

import weakref

import numpy as np
import scipy.sparse as sp

__all__ = ["solve_parametric"]

# problem -> (options key, _Resolver or None when unsupported); the value never references
# the problem, so an entry goes away with its problem
_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_FALLBACK = object()


class _Unsupported(Exception):
    """The fast path cannot serve this problem: use problem.solve."""


def _canonical(rows, cols, shape, M, keep=None):
    """CSC structure of the entries ``(rows, cols)`` and the map to its ``data`` array.

    ``M`` maps theta to the raw entry values (one row per entry, duplicates allowed, any
    order); returns ``(indices, indptr, G)`` with ``G @ theta`` the CSC data in canonical
    order (duplicates summed, row indices sorted within each column).
    """
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    if keep is not None:
        rows, cols, M = rows[keep], cols[keep], M[np.flatnonzero(keep)]
    keys = cols * shape[0] + rows
    uniq, pos = np.unique(keys, return_inverse=True)
    S = sp.csr_array((np.ones(len(keys)), (pos.ravel(), np.arange(len(keys)))),
                     shape=(len(uniq), len(keys)))
    G = sp.csr_array(S @ M)
    indices = (uniq % shape[0]).astype(np.int32)
    indptr = np.zeros(shape[1] + 1, dtype=np.int64)
    np.add.at(indptr, (uniq // shape[0]) + 1, 1)
    return indices, np.cumsum(indptr).astype(np.int32), G


def _depends_on_params(G):
    """True when the map ``G`` (last column: constant term) uses some parameter."""
    G = sp.csc_array(G)
    G.eliminate_zeros()
    return G.shape[1] > 1 and G[:, :-1].nnz > 0


def _close(a, b):
    """``a == b`` up to rounding (arrays, or sparse matrices compared entry-wise)."""
    if sp.issparse(a) or sp.issparse(b):
        a, b = sp.csc_array(a), sp.csc_array(b)
        if a.shape != b.shape:
            return False
        diff = abs(a - b).max() if a.shape[0] * a.shape[1] else 0.0
        scale = 1.0 + (abs(b).max() if b.nnz else 0.0)
        return bool(diff <= 1e-10 * scale)
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return False
    scale = 1.0 + (np.abs(b).max() if b.size else 0.0)
    return bool(np.all(np.abs(a - b) <= 1e-10 * scale))


class _PrimalOnly:
    """A Clarabel result seen without its dual solution (CVXPY then recovers no duals)."""

    z = None

    def __init__(self, result):
        self._result = result

    def __getattr__(self, name):
        return getattr(self._result, name)


class _Resolver:
    """Clarabel re-solves of one DPP problem through the precomputed affine data map."""

    def __init__(self, problem, opts):
        import clarabel
        import cvxpy as cp
        from cvxpy import settings as s
        from cvxpy.cvxcore.python import canonInterface
        from cvxpy.reductions.eval_params import EvalParams
        from cvxpy.reductions.solvers.conic_solvers.clarabel_conif import (
            CLARABEL,
            dims_to_solver_cones,
        )
        from cvxpy.reductions.solvers.conic_solvers.conic_solver import ConicSolver
        from cvxpy.reductions.solvers.solving_chain import SolvingChain

        if not problem.parameters() or not problem.is_dcp(dpp=True):
            raise _Unsupported("not a parametric DPP problem")
        data, chain, inverse_data = problem.get_problem_data(cp.CLARABEL, solver_opts=opts)
        if (s.PARAM_PROB not in data or type(chain.solver) is not CLARABEL
                or any(isinstance(r, EvalParams) for r in chain.reductions)):
            raise _Unsupported("the solving chain is not a cached Clarabel DPP chain")
        prog = data[s.PARAM_PROB]
        if (getattr(prog, "lb_tensor", None) is not None
                or getattr(prog, "ub_tensor", None) is not None
                or getattr(prog, "dir_cones", None)
                or data.get(s.LOWER_BOUNDS) is not None
                or data.get(s.UPPER_BOUNDS) is not None):
            raise _Unsupported("variable bounds or direct cones")
        n = prog.x.size
        p = prog.total_param_size
        self._prog = prog
        self._param_vector = canonInterface.get_parameter_vector
        self._reductions = chain.reductions
        # a chain for problem.unpack_results that does not reference the problem
        self._chain = SolvingChain(reductions=chain.reductions)
        self._inverse_data = list(inverse_data)
        self._offset_key = s.OFFSET
        # the solver's inverse data (a dict, or SolverInverseData wrapping one) holds the
        # objective offset, which depends on the parameters
        self._solver_inv = getattr(inverse_data[-1], "inverse_data", inverse_data[-1])
        if not isinstance(self._solver_inv, dict) or s.OFFSET not in self._solver_inv:
            raise _Unsupported("unexpected solver inverse data")

        # objective: q and the offset d (last row)
        Tq = sp.csr_array(prog.q)
        if Tq.shape != (n + 1, p + 1):
            raise _Unsupported("unexpected objective tensor")
        self._Mq, self._Md = Tq[:n], Tq[n:]

        # constraints: [A | b] in CSC from the reduced tensor; the solver gets -A
        RA = prog.reduced_A
        RA.cache(False)
        if RA.problem_data_index is None:
            raise _Unsupported("no reduced constraint tensor")
        indices, indptr, shape = RA.problem_data_index
        m = int(shape[0])
        if tuple(shape) != (m, n + 1):
            raise _Unsupported("unexpected constraint tensor")
        R = sp.csr_array(RA.reduced_mat)
        cols = np.repeat(np.arange(n + 1), np.diff(indptr))
        rows = np.asarray(indices, dtype=np.int64)
        in_a = cols < n
        self._A_idx, self._A_ptr, MA = _canonical(rows, cols, (m, n), -R, in_a)
        b_rows = rows[~in_a]
        scatter = sp.csr_array((np.ones(len(b_rows)), (b_rows, np.arange(len(b_rows)))),
                               shape=(m, len(b_rows)))
        self._Mb = sp.csr_array(scatter @ R[np.flatnonzero(~in_a)])
        self._A_shape = (m, n)
        self._MA = MA
        self._A_param = _depends_on_params(MA)

        # quadratic objective: upper triangle of P
        self._MP = None
        self._P_idx = self._P_ptr = None
        self._quad = s.P in data
        if self._quad:
            RP = prog.reduced_P
            RP.cache(False)
            if RP.problem_data_index is None:
                raise _Unsupported("no reduced quadratic tensor")
            pi, pp, pshape = RP.problem_data_index
            if tuple(pshape) != (n, n):
                raise _Unsupported("unexpected quadratic tensor")
            pcols = np.repeat(np.arange(n), np.diff(pp))
            prow = np.asarray(pi, dtype=np.int64)
            self._P_idx, self._P_ptr, MP = _canonical(
                prow, pcols, (n, n), sp.csr_array(RP.reduced_mat), prow <= pcols)
            self._MP = MP
            self._P_param = _depends_on_params(MP)
        else:
            self._P_param = False

        # the map must reproduce the data CVXPY produced at the current parameter values
        theta = self._theta(problem)
        q, d, A, b, P = self._data(theta, full=True)
        if not (_close(q, data[s.C]) and _close(b, data[s.B])
                and _close(d, inverse_data[-1][s.OFFSET]) and _close(A, data[s.A])
                and (not self._quad or _close(P, sp.triu(data[s.P])))):
            raise _Unsupported("the affine data map does not reproduce CVXPY's data")

        self._cones = dims_to_solver_cones(data[ConicSolver.DIMS])
        self._P0 = P if self._quad else sp.csc_array((n, n))
        self._A0 = A
        self._new_solver = clarabel.DefaultSolver
        self._settings = CLARABEL.parse_solver_opts(False, opts)
        solver = clarabel.DefaultSolver(self._P0, q, A, b, self._cones, self._settings)
        # else a new solver per re-solve
        self._solver = solver if solver.is_data_update_allowed() else None

    def _theta(self, problem):
        for r in self._reductions:
            r.update_parameters(problem)
        id_to_param = self._prog.id_to_param
        return self._param_vector(
            self._prog.total_param_size, self._prog.param_id_to_col,
            self._prog.param_id_to_size, lambda i: np.asarray(id_to_param[i].value))

    def _data(self, theta, full=False):
        q = self._Mq @ theta
        d = float((self._Md @ theta)[0])
        b = self._Mb @ theta
        A = P = None
        if full or self._A_param:
            A = sp.csc_array((self._MA @ theta, self._A_idx, self._A_ptr), shape=self._A_shape)
        if self._quad and (full or self._P_param):
            P = sp.csc_array((self._MP @ theta, self._P_idx, self._P_ptr),
                             shape=self._A_shape[1:] * 2)
        return q, d, A, b, P

    def solve(self, problem):
        """Re-solve at the current parameter values; _FALLBACK when problem.solve must."""
        theta = self._theta(problem)
        q, d, A, b, P = self._data(theta)
        if not np.all(np.isfinite(q)) or not np.all(np.isfinite(b)):
            return _FALLBACK
        if self._solver is not None:
            update = {"q": q, "b": b}
            if A is not None:
                update["A"] = A.data
            if P is not None:
                update["P"] = P.data
            self._solver.update(**update)
            solver = self._solver
        else:
            solver = self._new_solver(self._P0 if P is None else P, q,
                                      self._A0 if A is None else A, b, self._cones,
                                      self._settings)
        result = solver.solve()
        self._solver_inv[self._offset_key] = d
        # primal values only (module docstring); duals cleared rather than left stale
        problem.unpack_results(_PrimalOnly(result), self._chain, self._inverse_data)
        for c in problem.constraints:
            for dv in c.dual_variables:
                dv.save_value(None)
        return problem.value


def _resolver(problem, key, opts):
    """The cached _Resolver of ``problem`` for these options, or None (use problem.solve)."""
    entry = _CACHE.get(problem)
    if entry is not None and entry[0] == key:
        return entry[1]
    if any(p.value is None for p in problem.parameters()):
        return None  # problem.solve raises CVXPY's own error; nothing cached
    try:
        resolver = _Resolver(problem, opts)
    except Exception:  # unsupported problem or CVXPY internals: the ordinary path
        resolver = None
    _CACHE[problem] = (key, resolver)
    return resolver


def solve_parametric(problem, solver="CLARABEL", tol=1e-8, *, max_iter=None):
    """Re-solve a DPP problem at its current parameter values; strict status checking.

    Same contract as :func:`psdsos.solvers.solve_cvxpy` (same solver options, status
    checks, errors and warnings; the problem's status, value and variable values are set),
    through the fast path of this module for Clarabel (dual values: None) and
    ``problem.solve`` otherwise.

    Parameters
    ----------
    problem : cvxpy.Problem
        Built once with ``cp.Parameter`` objects, whose values are set before each call.
    solver : {"CLARABEL", "SCS"} (case-insensitive)
    tol : float
    max_iter : int, optional

    Returns
    -------
    float : the optimal value
    """
    import cvxpy as cp

    from psdsos._validation import check_scalar
    from psdsos.solvers import SolverStatusError, solve_cvxpy
    from psdsos.solvers._primal import _solver_options, check_status

    name = str(solver).upper()
    if name != "CLARABEL":
        return solve_cvxpy(problem, solver=name, tol=tol, max_iter=max_iter)
    tol = check_scalar(tol, "tol", lower=0.0, lower_inclusive=False)
    opts = _solver_options(name, tol, 200 if max_iter is None else int(max_iter))
    resolver = _resolver(problem, tuple(sorted(opts.items())), opts)
    value = _FALLBACK
    if resolver is not None:
        try:
            value = resolver.solve(problem)
        except cp.error.SolverError as exc:
            raise SolverStatusError(f"solver {name} failed: {exc}") from exc
    if value is _FALLBACK:
        return solve_cvxpy(problem, solver=name, tol=tol, max_iter=max_iter)
    check_status(problem, name, stacklevel=2)
    return value
