"""What the cross-validated estimators share: their splits (with ``groups``) and their files.

:class:`~psdsos.estimators.PSDRegressorCV`, :class:`~psdsos.estimators.ConvexRegressorCV`
and :class:`~psdsos.estimators.ShapeConstrainedRegressorCV` pass ``fit(..., groups=g)`` to
their splitter's ``split(X, y, groups)`` as scikit-learn's ``GridSearchCV`` does
(:func:`check_groups`), and save themselves with :class:`_SavedSearch`: the search's
results and the file of ``best_estimator_`` embedded in their own (never pickle).
"""

from __future__ import annotations

import inspect
import numbers
from typing import Any, ClassVar

import numpy as np

from psdsos._persistence import SavedEstimator, embed_estimator, kernel_by_name, load_embedded
from psdsos._validation import PathLike
from psdsos.kernels import Kernel, get_kernel
from psdsos.model_selection._folds import describe
from psdsos.model_selection._scoring import check_scoring

__all__: list[str] = []


class ScoringOption:
    """The parameter check of a CV estimator's ``scoring``: the forms of
    :func:`psdsos.model_selection.grid_search_cv` (:func:`check_scoring`)."""

    def check(self, name: str, value: Any, owner: str) -> None:
        try:
            check_scoring(value)
        except ValueError as exc:
            raise ValueError(f"{name} of {owner}: {exc}") from None


# ---- the files -------------------------------------------------------------------------------
#: Prefix of the arrays of ``best_estimator_`` in a CV estimator's file.
BEST_PREFIX = "best_estimator."

#: scikit-learn splitters saved by class name and parameters (JSON values only); any other
#: ``cv`` object is not saved (see :class:`_SavedSearch`).
SPLITTERS = ("KFold", "GroupKFold", "StratifiedKFold", "StratifiedGroupKFold", "ShuffleSplit",
             "GroupShuffleSplit", "StratifiedShuffleSplit", "LeaveOneOut", "LeaveOneGroupOut",
             "LeavePOut", "LeavePGroupsOut", "TimeSeriesSplit")

_JSON_SCALARS = (bool, int, float, str)


def _plain(value: Any) -> Any:
    """A numpy scalar as Python's; anything else unchanged."""
    return value.item() if isinstance(value, np.generic) else value


def _splitter_spec(cv: Any) -> dict[str, Any] | None:
    """{"class", "params"} of a scikit-learn splitter of :data:`SPLITTERS` whose parameters
    are JSON values, else None."""
    cls = type(cv)
    if cls.__name__ not in SPLITTERS or not cls.__module__.startswith("sklearn.model_selection"):
        return None
    params = {}
    for name, par in inspect.signature(cls.__init__).parameters.items():
        if name == "self" or par.kind in (par.VAR_POSITIONAL, par.VAR_KEYWORD):
            continue
        if not hasattr(cv, name):
            return None
        value = _plain(getattr(cv, name))
        if value is not None and not isinstance(value, _JSON_SCALARS):
            return None
        params[name] = value
    return {"class": cls.__name__, "params": params}


def _splitter(spec: Any, source: str) -> Any:
    """The splitter of a :func:`_splitter_spec` entry (of a file: checked)."""
    import sklearn.model_selection

    if (not isinstance(spec, dict) or spec.get("class") not in SPLITTERS
            or not isinstance(spec.get("params"), dict)):
        raise ValueError(f"metadata entry 'cv_splitter' of {source} must name a scikit-learn "
                         f"splitter of {list(SPLITTERS)} and its parameters, got {spec!r}")
    try:
        return getattr(sklearn.model_selection, spec["class"])(**spec["params"])
    except (TypeError, ValueError) as exc:
        raise ValueError(f"metadata entry 'cv_splitter' of {source}: cannot build "
                         f"{spec['class']}: {exc}") from None


def _encode_value(value: Any, owner: str) -> Any:
    """A value of ``cv_results_["params"]`` as JSON (a Kernel object by name and bandwidth)."""
    value = _plain(value)
    if isinstance(value, Kernel):
        name, sigma = kernel_by_name(value, owner)
        return {"kernel": name, "sigma": sigma}
    if value is None or isinstance(value, _JSON_SCALARS):
        return value
    raise ValueError(f"cannot save {owner}: its cv_results_['params'] hold {value!r}, which "
                     "is not a number, a string or a registered kernel")


def _decode_value(value: Any, source: str) -> Any:
    if isinstance(value, dict):
        if set(value) != {"kernel", "sigma"} or not isinstance(value["kernel"], str):
            raise ValueError(f"metadata entry 'cv_results.params' of {source} holds {value!r}")
        try:
            return get_kernel(value["kernel"], value["sigma"])
        except (TypeError, ValueError) as exc:
            raise ValueError(f"metadata entry 'cv_results.params' of {source}: {exc}") from None
    if value is None or isinstance(value, _JSON_SCALARS):
        return value
    raise ValueError(f"metadata entry 'cv_results.params' of {source} holds {value!r}")


def encode_cv_results(results: dict[str, Any], owner: str) -> dict[str, Any]:
    """``cv_results_`` as JSON: ``params``, the names of the ``param_<name>`` columns (rebuilt
    from ``params`` when loaded) and every 1-D numeric column with its dtype (JSON keeps
    NaN, which failed CV fits score, and every float exactly)."""
    params = [{str(k): _encode_value(v, owner) for k, v in p.items()}
              for p in results["params"]]
    names = [k[len("param_"):] for k in results if k.startswith("param_")]
    columns = {}
    for key, value in results.items():
        if key == "params" or key.startswith("param_"):
            continue
        A = np.asarray(value)
        if A.ndim == 1 and A.dtype.kind in "fiub":
            columns[key] = {"dtype": A.dtype.str, "values": A.tolist()}
    return {"params": params, "param_names": names, "columns": columns}


def decode_cv_results(entry: dict[str, Any], source: str) -> dict[str, Any]:
    """The ``cv_results_`` of :func:`encode_cv_results`'s entry, checked."""
    params = entry["params"]
    if not all(isinstance(p, dict) for p in params):
        raise ValueError(f"metadata entry 'cv_results.params' of {source} must be a list of "
                         "JSON objects")
    params = [{k: _decode_value(v, source) for k, v in p.items()} for p in params]
    n = len(params)
    out: dict[str, Any] = {}
    for name in entry["param_names"]:
        if not isinstance(name, str):
            raise ValueError(f"metadata entry 'cv_results.param_names' of {source} must hold "
                             f"strings, got {name!r}")
        col = np.ma.MaskedArray(np.empty(n, dtype=object), mask=True)
        for i, p in enumerate(params):
            if name in p:
                col[i] = p[name]
        out[f"param_{name}"] = col
    out["params"] = params
    for key, col in entry["columns"].items():
        where = f"metadata entry 'cv_results.columns.{key}' of {source}"
        values = col.get("values") if isinstance(col, dict) else None
        try:
            dtype = np.dtype(col["dtype"])
        except (TypeError, KeyError) as exc:
            raise ValueError(f"{where} has no valid dtype: {exc}") from None
        if (dtype.kind not in "fiub" or not isinstance(values, list) or len(values) != n
                or not all(isinstance(v, (int, float)) for v in values)):
            raise ValueError(f"{where} must hold {n} numbers (one per candidate) of a numeric "
                             f"dtype, got dtype {dtype} and {values!r}")
        out[key] = np.asarray(values, dtype=dtype)
    return out


class _SavedSearch(SavedEstimator):
    """The file of a CV estimator (mixin; a subclass sets :attr:`_best_class` and declares its
    fitted scalars in ``_fitted_scalars``).

    Saved: the constructor parameters (a registered Kernel object by name, its bandwidth in
    the metadata entry ``kernel_sigmas``; a scikit-learn splitter of :data:`SPLITTERS` by
    class and parameters, ``cv_splitter``), the fitted scalars, ``cv_results_``
    (:func:`encode_cv_results`) and the file of ``best_estimator_``, embedded (its arrays
    prefixed ``"best_estimator."``, its metadata the entry ``best_estimator``).  Loaded:
    ``best_params_`` from ``cv_results_["params"][best_index_]``, and what the CV estimator
    shares with its ``best_estimator_`` (``certificate_``, ...) from the loaded one.  A
    ``cv`` or ``scoring`` that is neither JSON nor such a splitter (a custom splitter, a
    list of splits, a callable scorer) is not saved: the loaded estimator has None there
    (it predicts as the saved one; give them again before refitting it) and the file
    records their ``repr`` (``unsaved_params``).
    """

    _best_class: ClassVar[type]
    _saved_fitted_attr = "best_estimator_"
    _saved_meta = {"best_estimator": "dict",
                   "cv_results": {"params": "list", "param_names": "list", "columns": "dict"},
                   "kernel_sigmas?": "dict", "cv_splitter?": "dict", "unsaved_params?": "dict"}

    def save(self, path: PathLike, *, metadata: dict | None = None) -> None:
        """Save the fitted search to ``path`` (.npz + JSON metadata; never pickle), its
        ``best_estimator_`` and ``cv_results_`` included; :func:`psdsos.load` reads it.

        ``metadata``: optional JSON-able dict stored alongside (e.g. column names).
        """
        self._save(path, metadata)

    def _saved_params_and_meta(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """(constructor parameters saved other than as set, metadata entries saying how)."""
        owner = type(self).__name__
        params: dict[str, Any] = {}
        meta: dict[str, Any] = {}
        sigmas: dict[str, Any] = {}
        for name in ("kernel", "kernels"):
            if not hasattr(self, name):  # the searches have "kernel" or "kernels"
                continue
            value = getattr(self, name)
            if isinstance(value, Kernel):
                params[name], sigmas[name] = kernel_by_name(value, owner)
            elif name == "kernels" and not isinstance(value, str):
                pairs = [kernel_by_name(k, owner) if isinstance(k, Kernel) else (k, None)
                         for k in value]
                params[name] = [k for k, _ in pairs]
                if any(s is not None for _, s in pairs):
                    sigmas[name] = [s for _, s in pairs]
        unsaved = {}
        cv = self.cv
        if isinstance(cv, numbers.Integral) and not isinstance(cv, bool):
            params["cv"] = int(cv)
        elif not (cv is None or isinstance(cv, str)):
            params["cv"] = None
            spec = _splitter_spec(cv)
            if spec is None:
                # a splitter by its repr; (train, test) pairs described, never dumped
                unsaved["cv"] = repr(cv) if hasattr(cv, "split") else describe(cv)
            else:
                meta["cv_splitter"] = spec
        scoring = getattr(self, "scoring", None)
        if not (scoring is None or isinstance(scoring, str)):
            params["scoring"] = None
            unsaved["scoring"] = repr(scoring)
        if sigmas:
            meta["kernel_sigmas"] = sigmas
        if unsaved:
            meta["unsaved_params"] = unsaved
        return params, meta

    def _saved_param_values(self):
        return self._saved_params_and_meta()[0]

    def _saved_extra(self):
        arrays, best = embed_estimator(self.best_estimator_, BEST_PREFIX)
        meta = {**self._saved_params_and_meta()[1], "best_estimator": best,
                "cv_results": encode_cv_results(self.cv_results_, type(self).__name__)}
        return arrays, meta

    def _restore_saved(self, arrays, meta, source):
        for name, sigma in meta.get("kernel_sigmas", {}).items():
            value = getattr(self, name, None)
            try:
                if name == "kernel" and isinstance(value, str):
                    self.kernel = get_kernel(value, sigma)
                elif name == "kernels" and isinstance(sigma, list) and len(sigma) == len(value):
                    self.kernels = [k if s is None else get_kernel(k, s)
                                    for k, s in zip(value, sigma, strict=True)]
                else:
                    raise ValueError(f"{sigma!r} does not match the parameter {name} = "
                                     f"{value!r}")
            except (TypeError, ValueError) as exc:
                raise ValueError(f"metadata entry 'kernel_sigmas' of {source}: {exc}") from None
        if "cv_splitter" in meta:
            self.cv = _splitter(meta["cv_splitter"], source)
        best = load_embedded(self._best_class, arrays, meta["best_estimator"], BEST_PREFIX,
                             f"{source} (its best_estimator_)")
        self.best_estimator_ = best
        self.cv_results_ = decode_cv_results(meta["cv_results"], source)
        n = len(self.cv_results_["params"])
        if not 0 <= self.best_index_ < n:
            raise ValueError(f"{source}: best_index_ = {self.best_index_} is not the index of "
                             f"one of the {n} candidates of cv_results_")
        if best.n_features_in_ != self.n_features_in_:
            raise ValueError(f"{source}: best_estimator_ has {best.n_features_in_} features, "
                             f"the search {self.n_features_in_}")
        self.best_params_ = dict(self.cv_results_["params"][self.best_index_])
        self._restore_from_best(best)

    def _restore_from_best(self, best: Any) -> None:
        """Hook: the attributes the search shares with ``best_estimator_``."""
