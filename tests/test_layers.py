"""The layering of ARCHITECTURE.md, checked statically: lower layers never import higher ones.

Every module under psdsos/ is parsed with ``ast`` (nothing is imported, so a module that
fails to import cannot hide its imports).  Absolute, relative, function-local and
``importlib.import_module("psdsos...")`` imports all count.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PKG = ROOT / "psdsos"

#: The subpackages ARCHITECTURE.md describes; anything else under psdsos/ needs a decision.
KNOWN = {
    "kernels",
    "features",
    "losses",
    "sos",
    "problems",
    "solvers",
    "certify",
    "estimators",
    "structured",
    "geometry",
    "model_selection",
    "datasets",
    "plotting",
    "cli",
}
#: Top-level modules of psdsos (``psdsos/_validation.py`` is the shared leaf).
TOP_MODULES = {"__init__", "_validation", "_config", "_params", "_persistence", "_npz",
               "__main__", "_version"}
#: Top-level modules every layer may import: the leaves, the parameter checks and the model
#: file format (these import nothing above the kernels, see ``SHARED_IMPORTS``).
SHARED_MODULES = ("_validation", "_config", "_params", "_persistence", "_npz")

#: Allowed psdsos imports per subpackage (itself and psdsos._validation are always allowed,
#: except where noted).  ``None`` = no whitelist, only the blacklist below applies.
ALLOWED = {
    "kernels": set(),
    "features": {"kernels"},
    "losses": set(),
    "sos": {"kernels", "features", "losses"},
    "problems": {"kernels", "features", "losses", "sos"},
    "solvers": {"kernels", "features", "losses", "sos", "problems"},
    "certify": {"kernels", "features", "losses", "sos", "problems", "solvers"},
    "geometry": set(),
    "estimators": None,
    "model_selection": None,
}
FORBIDDEN = {
    "estimators": {"structured", "cli", "plotting"},
    "model_selection": {"estimators", "structured", "cli", "plotting"},
}


def module_name(path):
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def psdsos_imports(source, modname, is_package, modules=()):
    """Fully qualified psdsos modules imported by ``source`` (module ``modname``).

    ``from P import x`` gives P, or P.x when that is one of ``modules`` (a submodule)."""
    tree = ast.parse(source)
    package = modname if is_package else modname.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                if node.level > 1:
                    base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if node.level and not node.module:
                # "from . import x": x may be a submodule
                found += [(f"{mod}.{a.name}", node.lineno) for a in node.names]
            elif mod == "psdsos":
                # "from psdsos import x": x may be a subpackage
                found += [(f"psdsos.{a.name}", node.lineno) for a in node.names]
            else:
                found += [(f"{mod}.{a.name}" if f"{mod}.{a.name}" in modules else mod,
                           node.lineno) for a in node.names]
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in ("import_module", "__import__") and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    found.append((arg.value, node.lineno))
    return [(m, line) for m, line in found if m == "psdsos" or m.startswith("psdsos.")]


def target_layer(imported):
    """'kernels' for psdsos.kernels._kernels, '_validation' for psdsos._validation,
    '' for the top-level package itself (which re-exports the estimators)."""
    parts = imported.split(".")
    return parts[1] if len(parts) > 1 else ""


def violations_for(layer, imports):
    out = []
    for mod, line in imports:
        tgt = target_layer(mod)
        if tgt == layer:
            continue
        if tgt == "":
            out.append((mod, line, "imports the top-level psdsos package (it loads every layer)"))
            continue
        if tgt in TOP_MODULES:
            if tgt in SHARED_MODULES:
                continue
            out.append((mod, line, "imports a top-level module"))
            continue
        allowed = ALLOWED.get(layer)
        if allowed is not None and tgt not in allowed:
            out.append(
                (
                    mod,
                    line,
                    f"{layer} may import only {sorted(allowed) or 'nothing'} "
                    "(and psdsos._validation)",
                )
            )
        if tgt in FORBIDDEN.get(layer, ()):
            out.append((mod, line, f"{layer} must not import {tgt}"))
    return out


def all_modules():
    return sorted(p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts)


def layer_of(path):
    """The layer of a module: its subpackage, or a layer kept in one module.

    Returns None for the top-level modules (psdsos/__init__.py, psdsos/_validation.py)."""
    rel = path.relative_to(PKG)
    if len(rel.parts) > 1:
        return rel.parts[0]
    return rel.stem if rel.stem in KNOWN else None


def test_every_module_parses_and_belongs_to_a_known_layer():
    mods = all_modules()
    assert len(mods) > 10
    for path in mods:
        ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        rel = path.relative_to(PKG)
        layer = layer_of(path)
        if layer is None:
            assert rel.stem in TOP_MODULES, f"unexpected top-level module psdsos/{rel}"
        else:
            assert layer in KNOWN, f"psdsos/{rel.parts[0]} is not a layer of ARCHITECTURE.md"


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_layering(layer):
    bad = []
    for path in all_modules():
        rel = path.relative_to(PKG)
        if layer_of(path) != layer:
            continue
        imports = psdsos_imports(
            path.read_text(encoding="utf-8"), module_name(path), path.name == "__init__.py"
        )
        bad += [
            f"psdsos/{rel}:{line}: {mod}: {why}"
            for mod, line, why in violations_for(layer, imports)
        ]
    assert not bad, "layering violations:\n" + "\n".join(bad)


#: Inside structured/: the polytopes and the output spaces sit below the estimators and the
#: registry, and the polytopes below the spaces (the discrete spaces decode through them).
STRUCTURED_FORBIDDEN = {
    "psdsos.structured.polytopes": ("psdsos.structured.spaces", "psdsos.structured._estimator",
                                    "psdsos.structured._registry"),
    "psdsos.structured.spaces": ("psdsos.structured._estimator", "psdsos.structured._registry"),
}


def test_structured_internal_layering():
    bad = []
    for path in sorted((PKG / "structured").rglob("*.py")):
        modname = module_name(path)
        for owner, forbidden in STRUCTURED_FORBIDDEN.items():
            if modname != owner and not modname.startswith(owner + "."):
                continue
            imports = psdsos_imports(
                path.read_text(encoding="utf-8"), modname, path.name == "__init__.py"
            )
            bad += [
                f"{modname}:{line}: imports {mod}"
                for mod, line in imports
                if any(mod == f or mod.startswith(f + ".") for f in forbidden)
            ]
    assert (PKG / "structured" / "spaces" / "__init__.py").exists()
    assert not bad, "structured layering violations:\n" + "\n".join(bad)


@pytest.mark.parametrize("leaf", ["_validation", "_config"])
def test_leaf_modules_import_nothing_from_psdsos(leaf):
    path = PKG / f"{leaf}.py"
    imports = psdsos_imports(path.read_text(encoding="utf-8"), f"psdsos.{leaf}", False)
    assert imports == []


#: What the shared top-level modules may import: the leaves, each other (in this order) and
#: the kernels (the lowest layer: kernel objects are saved by name).
SHARED_IMPORTS = {
    "_params": {"_validation", "kernels", "losses"},
    "_npz": {"_validation"},
    "_persistence": {"_validation", "_params", "_npz", "kernels"},
}


@pytest.mark.parametrize("module", sorted(SHARED_IMPORTS))
def test_shared_modules_import_only_the_leaves(module):
    path = PKG / f"{module}.py"
    imports = psdsos_imports(path.read_text(encoding="utf-8"), f"psdsos.{module}", False)
    bad = [(m, line) for m, line in imports if target_layer(m) not in SHARED_IMPORTS[module]]
    assert not bad, f"psdsos/{module}.py imports {bad}"


def test_layers_present():
    """The layers this suite relies on exist (a rename must update the rules above)."""
    for layer in ("kernels", "features", "losses", "sos", "solvers", "estimators", "geometry"):
        assert (PKG / layer / "__init__.py").exists(), layer


# ---------------------------------------------------------------------------------------
# the checker itself can fail
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "source, modname, is_pkg, layer, expect",
    [
        ("from psdsos.estimators import PSDRegressor", "psdsos.kernels._k", False, "kernels", 1),
        ("import psdsos.sos", "psdsos.features._f", False, "features", 1),
        ("from ..solvers import solve_dual", "psdsos.sos._model", False, "sos", 1),
        ("from .. import estimators", "psdsos.sos._model", False, "sos", 1),
        ("from . import _maps", "psdsos.sos", True, "sos", 0),
        ("from ._maps import x", "psdsos.sos._model", False, "sos", 0),
        ("def f():\n    from psdsos.solvers import x\n", "psdsos.sos._m", False, "sos", 1),
        (
            "import importlib\nimportlib.import_module('psdsos.structured')",
            "psdsos.estimators._b",
            False,
            "estimators",
            1,
        ),
        ("from psdsos import PSDRegressor", "psdsos.solvers._d", False, "solvers", 1),
        ("import psdsos", "psdsos.geometry._g", False, "geometry", 1),
        ("from psdsos._validation import check_scalar", "psdsos.geometry._g", False, "geometry", 0),
        ("from psdsos.kernels import Kernel", "psdsos.geometry._g", False, "geometry", 1),
        ("from psdsos.sos import PSDModel", "psdsos.estimators._p", False, "estimators", 0),
        ("from psdsos.plotting import plot", "psdsos.estimators._p", False, "estimators", 1),
        ("import numpy as np\nfrom scipy import linalg", "psdsos.kernels._k", False, "kernels", 0),
    ],
)
def test_checker_detects_violations(source, modname, is_pkg, layer, expect):
    imports = psdsos_imports(source, modname, is_pkg)
    assert len(violations_for(layer, imports)) == expect
