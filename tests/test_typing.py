"""The package type-checks: mypy on psdsos/ (configuration in pyproject.toml, [tool.mypy]), and
the examples, user code, type-check against its annotations."""

import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_mypy_clean(tmp_path):
    pytest.importorskip("mypy", reason="mypy is part of the test extras; not installed here")
    r = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"),
                        "--config-file", str(ROOT / "pyproject.toml"), str(ROOT / "psdsos"),
                        str(ROOT / "examples")],
                       capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


def test_package_is_marked_typed():
    assert (ROOT / "psdsos" / "py.typed").is_file()


# ---------------------------------------------------------------------------------------------
# Every public callable is fully annotated: each parameter (bar self/cls) and the return.
# "Public" = the names in ``__all__`` of psdsos and of each public (non-underscore) subpackage
# or module; for a class, every public method, ``__init__`` and ``__call__`` that psdsos itself
# defines (inherited scikit-learn methods such as get_params are scikit-learn's business).

_SPECIAL_METHODS = ("__init__", "__call__")


def _public_modules():
    import importlib
    import pkgutil

    import psdsos

    names = ["psdsos"]
    for info in pkgutil.walk_packages(psdsos.__path__, prefix="psdsos."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        names.append(info.name)
    # every public module imports without its optional dependencies (matplotlib, dask are
    # imported inside the functions that need them)
    return [importlib.import_module(name) for name in names]


def _own_functions(obj):
    """(qualified name, function) for a function or each psdsos-defined method of a class."""
    import inspect

    if inspect.isfunction(obj):
        yield obj.__qualname__, obj
        return
    if not inspect.isclass(obj):
        return
    seen = set()
    for klass in obj.__mro__:
        if not klass.__module__.startswith("psdsos"):
            continue
        for attr, raw in vars(klass).items():
            if attr in seen or (attr.startswith("_") and attr not in _SPECIAL_METHODS):
                continue
            seen.add(attr)
            if isinstance(raw, (staticmethod, classmethod)):
                raw = raw.__func__
            if isinstance(raw, property):
                raw = raw.fget
            if inspect.isfunction(raw) and raw.__module__.startswith("psdsos"):
                yield f"{obj.__name__}.{attr}", raw


def _missing_annotations(func):
    import inspect

    sig = inspect.signature(func)
    missing = [p.name for i, p in enumerate(sig.parameters.values())
               if p.annotation is inspect.Parameter.empty
               and not (i == 0 and p.name in ("self", "cls"))]
    if sig.return_annotation is inspect.Signature.empty:
        missing.append("return")
    return missing


def _public_callables():
    out = {}
    for mod in _public_modules():
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name)
            for qual, func in _own_functions(obj):
                out[f"{func.__module__}.{qual}"] = func
    return out


def test_missing_annotations_finds_gaps():
    """The check itself: unannotated parameters and returns are reported, self is not."""

    class C:
        def f(self, x, y: int = 0):
            return x

        def g(self, x: int) -> int:
            return x

    assert _missing_annotations(C.f) == ["x", "return"]
    assert _missing_annotations(C.g) == []
    names = [q for q, _ in _own_functions(C)]
    assert names == []  # not a psdsos class: its methods are not psdsos's API
    from psdsos.kernels import GaussianKernel

    quals = {q for q, _ in _own_functions(GaussianKernel)}
    # inherited psdsos methods, __init__ and __call__ included; private helpers left out
    assert {"GaussianKernel.__init__", "GaussianKernel.__call__", "GaussianKernel.hessian"} <= quals
    assert not any(q.split(".")[1].startswith("_") and q.split(".")[1] not in
                   ("__init__", "__call__") for q in quals)


def test_public_api_is_annotated():
    funcs = _public_callables()
    assert len(funcs) > 100  # the walk found the API
    missing = {name: m for name, func in sorted(funcs.items())
               if (m := _missing_annotations(func))}
    assert not missing, (f"{len(missing)} of {len(funcs)} public callables lack annotations:\n"
                         + "\n".join(f"{k}: {v}" for k, v in missing.items()))
