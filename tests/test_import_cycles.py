"""No import circle between the modules of psdsos/, function-local imports included.

Read statically with ``ast``, as in test_layers.py: an edge from module A to module B for
every ``import`` of B in A (``from psdsos.x import y`` reaches the module psdsos.x.y when it
is one, else psdsos.x, whose ``__init__`` is then a module of its own).  Imports under
``if TYPE_CHECKING:`` run only under a type checker and are left out; the implicit import
of a module's parent packages is left out too (Python runs them first in any case).
"""

from __future__ import annotations

import ast

from test_layers import PKG, ROOT, all_modules, module_name, psdsos_imports

#: Modules that are packages (their name maps to their __init__.py).
MODULES = {module_name(p): p for p in all_modules()}


def _type_checking_lines(tree):
    """Line numbers inside ``if TYPE_CHECKING:`` blocks."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            t = node.test
            name = t.attr if isinstance(t, ast.Attribute) else getattr(t, "id", "")
            if name == "TYPE_CHECKING":
                for sub in node.body:
                    out.update(range(sub.lineno, (sub.end_lineno or sub.lineno) + 1))
    return out


def _target(imported):
    """The module an import runs: the longest prefix of the dotted name that is a module."""
    parts = imported.split(".")
    while parts:
        name = ".".join(parts)
        if name in MODULES:
            return name
        parts.pop()
    return None


def import_graph():
    graph = {}
    for name, path in MODULES.items():
        source = path.read_text(encoding="utf-8")
        skip = _type_checking_lines(ast.parse(source))
        edges = set()
        for mod, line in psdsos_imports(source, name, path.name == "__init__.py", MODULES):
            tgt = _target(mod)
            if line not in skip and tgt is not None and tgt != name:
                edges.add(tgt)
        graph[name] = edges
    return graph


def strongly_connected(graph):
    """Tarjan's algorithm (iterative): the components with more than one module."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on:
                    low[v] = min(low[v], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_graph_is_read():
    graph = import_graph()
    assert len(graph) > 50
    assert "psdsos.problems._base" in graph["psdsos.problems._shape"]
    assert ROOT / "psdsos" == PKG


def test_a_circle_is_found():
    """The finder itself: a circle of three modules is one component."""
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert strongly_connected(g) == [["a", "b", "c"]]


def test_no_import_circle():
    circles = strongly_connected(import_graph())
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)
