"""The defaults that the public classes' docstrings state ("name : type, default=value")
are the defaults of their signatures."""
import ast
import importlib
import inspect
import re

import pytest

MODULES = ("psdsos", "psdsos.features", "psdsos.kernels", "psdsos.structured", "psdsos.sos")
PATTERN = re.compile(r"^\s+(\w+) : [^\n]*?default=([^\n]+)$", re.M)


def documented_defaults(cls):
    """(parameter, stated value) pairs of the docstring that name one parameter and state a
    Python literal."""
    out = []
    for m in PATTERN.finditer(cls.__doc__ or ""):
        try:
            out.append((m.group(1), ast.literal_eval(m.group(2).strip())))
        except (ValueError, SyntaxError):
            continue  # not a literal (e.g. a description); nothing to compare
    return out


def public_classes():
    seen = {}
    for name in MODULES:
        try:
            mod = importlib.import_module(name)
        except ImportError:  # pragma: no cover - every listed module exists today
            continue
        for attr in getattr(mod, "__all__", dir(mod)):
            obj = getattr(mod, attr, None)
            if inspect.isclass(obj) and obj.__module__.startswith("psdsos"):
                seen[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return sorted(seen.items())


CLASSES = public_classes()


def test_classes_found():
    names = {k.rsplit(".", 1)[1] for k, _ in CLASSES}
    assert {"ShapeConstrainedRegressorCV", "ConvexRegressor", "PSDRegressor"} <= names
    assert sum(len(documented_defaults(c)) for _, c in CLASSES) > 100


@pytest.mark.parametrize("name,cls", CLASSES, ids=[k for k, _ in CLASSES])
def test_stated_defaults_are_the_signatures(name, cls):
    try:
        params = inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):  # pragma: no cover - a builtin's __init__
        pytest.skip("no Python signature")
    wrong = [(p, v, params[p].default) for p, v in documented_defaults(cls)
             if p in params and params[p].default != v]
    assert not wrong, f"{name}: docstring default != signature default: {wrong}"


def test_a_wrong_default_is_caught():
    class Example:
        """Parameters
        ----------
        sigmas : sequence of float, default=(1.0, 2.0, 4.0)
        """

        def __init__(self, sigmas=(1.0, 2.0)):
            self.sigmas = sigmas

    (p, v), = documented_defaults(Example)
    assert p == "sigmas" and v != inspect.signature(Example.__init__).parameters[p].default
