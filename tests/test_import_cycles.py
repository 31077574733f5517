"""No import cycles inside haap_solver: each module's imports, read with `ast`, form a graph
without a cycle.

What counts as an edge from module M (the ones Python runs when M, or a function of M, runs):
- every import statement in M, at top level or inside a function (a lazy import runs when the
  function does, and a cycle through it fails, or half-initialises a module, just the same);
  imports under ``if TYPE_CHECKING:`` are left out, since they never run;
- ``from x import y``: the module x.y where it is one (a submodule), else x (a name x defines
  or re-exports in its ``__init__``);
- importing a.b.c runs the ``__init__`` of every package above it first: so M depends on a.b
  and a too, except on the packages M itself lies in (those are already being imported when M
  runs, and a package's ``__init__`` importing its own submodules is how packages work). So a
  package ``__init__`` that re-exports from its submodules counts: a module elsewhere that
  imports one submodule of that package runs every re-export. A name M takes from its own
  package (``from a.b import name`` inside a.b.c, name not a submodule) is an edge to a.b's
  ``__init__`` all the same: it needs that ``__init__`` to have run past the name.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "haap_solver"


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth, outside ``if TYPE_CHECKING:`` blocks."""
    found: list[ast.Import | ast.ImportFrom] = []

    def walk(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking_only(child):
                for other in child.orelse:
                    walk(other)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append(child)
            walk(child)

    walk(tree)
    return found


def _absolute(node: ast.ImportFrom, name: str, is_package: bool) -> str:
    """The absolute module `from ... import` names (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    base = name.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph(root: Path) -> dict[str, set[str]]:
    """module -> the modules of the package its execution imports (see the module docstring)."""
    package = root.name
    files = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        own = {".".join(name.split(".")[:k]) for k in range(1, name.count(".") + 2)}
        targets: set[str] = set()
        for node in _imports(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
                continue
            base = _absolute(node, name, is_package)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                targets.add(sub if sub in files else base)
        edges: set[str] = set()
        for target in targets:
            if target != package and not target.startswith(package + "."):
                continue
            if target in files:
                edges.add(target)
            parts = target.split(".")
            for k in range(1, len(parts)):  # the packages above it, run first
                step = ".".join(parts[:k])
                if step in files and step not in own:
                    edges.add(step)
        edges.discard(name)
        graph[name] = edges
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each a cycle or
    several intertwined; sorted for a stable message."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def test_no_import_cycle_in_the_package() -> None:
    cycles = find_cycles(import_graph(ROOT))
    assert not cycles, "import cycles (each line: modules that import each other in a circle):\n" \
        + "\n".join(" <-> ".join(c) for c in cycles)


PLANTS = {
    # A lazy import inside a function closes a cycle like a top-level one.
    "lazy import": ("pkg/sub/x.py", "def g():\n    from pkg.b import Z\n"),
    # pkg.b imports pkg.sub.x, which runs pkg/sub/__init__ first; a re-export there reaches
    # pkg.sub.y, whose lazy import needs pkg.b.
    "package re-export": ("pkg/sub/__init__.py", "from pkg.sub.y import f\n"),
    # A submodule taking a name from its own package's __init__, which imports it.
    "name from the own package": ("pkg/a.py", "from pkg import VERSION\n"),
}


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_a_planted_cycle_is_found(tmp_path: Path, plant: str) -> None:
    """The finder itself: the same small package has no cycle, and each planted import gives
    it one."""
    files = {"pkg/__init__.py": "from pkg.a import X\n", "pkg/a.py": "X = 1\n",
             "pkg/b.py": "from pkg.sub.x import Y\n", "pkg/sub/__init__.py": "",
             "pkg/sub/x.py": "Y = 1\n", "pkg/sub/y.py": "def f():\n    from pkg import b\n"}
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert find_cycles(import_graph(tmp_path / "pkg")) == []
    rel, text = PLANTS[plant]
    (tmp_path / rel).write_text((tmp_path / rel).read_text() + text)
    assert find_cycles(import_graph(tmp_path / "pkg")) != []
