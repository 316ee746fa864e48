"""The layout of dashboard/state, dashboard/widgets.py and explainers/, read from their source
(nothing imported):

- no import cycle among the modules of dashboard/state and dashboard/widgets.py, nor among
  those of explainers/, counting imports inside functions too (a lazy import only hides a
  cycle until the function runs) and relative ones, but not ``if TYPE_CHECKING:`` ones
  (never run);
- no module of dashboard/state draws on the page: Streamlit elements are made in
  dashboard/widgets.py and the pages, never in the state they read;
- no function of explainers/ is longer than 100 lines (compiled kernels aside) beyond an
  allow-list that can only shrink.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STATE = ROOT / "dashboard" / "state"
STATE_PKG = "dashboard.state"


def _modules() -> dict[str, Path]:
    found = {STATE_PKG if p.stem == "__init__" else f"{STATE_PKG}.{p.stem}": p for p in sorted(STATE.glob("*.py"))}
    found["dashboard.widgets"] = ROOT / "dashboard" / "widgets.py"
    return found


def _package_modules(package: str) -> dict[str, Path]:
    """Every module of a package and its subpackages, by dotted name (a package by its __init__.py)."""
    found = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()
EXPLAINERS = _package_modules("explainers")

#: Streamlit calls that put an element on the page (or reserve a place for one)
DRAWING = frozenset({
    "button", "selectbox", "slider", "toggle", "checkbox", "radio", "number_input", "text_input", "multiselect",
    "file_uploader", "select_slider", "empty", "status", "caption", "markdown", "error", "warning", "info",
    "progress",
})

def _package(name: str, modules: dict[str, Path]) -> str:
    return name if modules.get(name, Path()).stem == "__init__" else name.rpartition(".")[0]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.Module):
    """(node, the module-level function it is in, or None) of every import that can run."""
    def walk(node, top):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for sub in child.orelse:
                    yield from walk(ast.Module(body=[sub], type_ignores=[]), top)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, top
            module_level = isinstance(node, ast.Module) and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            inner = child.name if module_level else top
            yield from walk(child, inner)

    yield from walk(tree, None)


def _targets(name: str, node, modules: dict[str, Path]) -> set[str]:
    """The modules of ``modules`` that ``node``, in module ``name``, imports (with the packages that run first)."""
    if isinstance(node, ast.Import):
        wanted = {alias.name for alias in node.names}
    else:
        if node.level:
            base = _package(name, modules).split(".")
            base = base[:len(base) - (node.level - 1)]
            module = ".".join(base + ([node.module] if node.module else []))
        else:
            module = node.module
        wanted = {module} | {f"{module}.{alias.name}" for alias in node.names}
    out = set()
    for target in wanted:
        parts = target.split(".")
        for i in range(1, len(parts) + 1):  # importing a.b.c runs a, a.b and a.b.c
            prefix = ".".join(parts[:i])
            inside = name == prefix or name.startswith(prefix + ".")  # a package's own modules run inside it
            if prefix in modules and prefix != name and not inside:
                out.add(prefix)
    return out


def import_graph(modules: dict[str, Path] = MODULES) -> dict[str, dict[str, list[tuple[int, str | None]]]]:
    """module -> {imported module: [(line, enclosing function or None), ...]}."""
    graph: dict = {name: {} for name in modules}
    for name, path in modules.items():
        for node, func in _imports(ast.parse(path.read_text(), filename=str(path))):
            for target in _targets(name, node, modules):
                graph[name].setdefault(target, []).append((node.lineno, func))
    return graph


def cycles(graph, ignored=frozenset()) -> list[list[str]]:
    """The import cycles (strongly connected components of more than one module, or a module
    importing itself), each as a list of module names."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if (v, w) in ignored:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph[v]:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_graph_reads_imports_at_every_level():
    """The checker sees module-level, lazy (inside a function) and package imports, not TYPE_CHECKING ones."""
    graph = import_graph()
    assert "dashboard.state.context" in graph["dashboard.state.rows"]
    assert graph["dashboard.state.attribution"]["dashboard.state.segments"][0][1] == "split_sample"  # lazy
    assert "dashboard.state" in graph["dashboard.widgets"]  # importing dashboard.state.x runs the package
    assert "dashboard.state" not in graph["dashboard.state.rows"]  # ... but not for its own modules
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a\nelse:\n    import b\n"
                     "def f():\n    import c\n")
    assert [(n.names[0].name, func) for n, func in _imports(tree)][1:] == [("b", None), ("c", "f")]
    assert cycles({"a": {"b": []}, "b": {"a": []}, "c": {"a": []}}) == [["a", "b"]]
    assert cycles({"a": {"a": []}}) == [["a"]]


def _cycle_report(graph, found) -> str:
    lines = []
    for comp in found:
        for a in comp:
            for b, where in graph[a].items():
                if b in comp:
                    lines.append(f"  {a} -> {b} at line(s) {', '.join(str(n) for n, _ in where)}")
    return "\n".join(lines)


def test_no_import_cycles():
    graph = import_graph()
    found = cycles(graph)
    assert not found, "import cycles among dashboard/state and dashboard/widgets.py:\n" + _cycle_report(graph, found)


def test_no_import_cycles_in_dashboard():
    """The whole dashboard package (pages, figures, state, the server), not only its state."""
    graph = import_graph(_package_modules("dashboard"))
    assert "dashboard.state.cache" in graph["dashboard.state.context"]  # from .cache import
    assert any(name.startswith("dashboard.figures") for name in graph)
    found = cycles(graph)
    assert not found, "import cycles among the modules of dashboard/:\n" + _cycle_report(graph, found)


def test_the_explainers_graph_reads_relative_and_lazy_imports():
    graph = import_graph(EXPLAINERS)
    assert "explainers.errors" in graph["explainers.segments._conditions"]  # from ..errors import
    assert "explainers.segments._conditions" in graph["explainers.segments._proposals"]  # from ._conditions
    assert "explainers.segments" not in graph["explainers.segments._proposals"]  # its own package
    assert "explainers.model" in graph["explainers"]  # a package's __init__ importing its modules
    lazy = graph["explainers.segments._errors"]["explainers.importance._common"]
    assert lazy[0][1] == "_row_errors"  # inside a function


def test_no_import_cycles_in_explainers():
    """A cycle says a concept sits in the wrong module: move it to the one both sides import."""
    graph = import_graph(EXPLAINERS)
    found = cycles(graph)
    assert not found, "import cycles among the modules of explainers/:\n" + _cycle_report(graph, found)


def _drawing_calls(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    aliases = {"st"}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases |= {a.asname or a.name for a in node.names if a.name == "streamlit"}
        elif isinstance(node, ast.ImportFrom) and node.module == "streamlit":
            found += [f"{path.name}:{node.lineno}: from streamlit import {a.name}" for a in node.names
                      if a.name in DRAWING]
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in DRAWING:
            root = node.func.value
            while isinstance(root, ast.Attribute):  # st.sidebar.button(...)
                root = root.value
            if isinstance(root, ast.Name) and root.id in aliases:
                found.append(f"{path.name}:{node.lineno}: {ast.unparse(node.func)}(...)")
    return found


def test_state_never_draws():
    found = [hit for name, path in MODULES.items() if name.startswith(STATE_PKG) for hit in _drawing_calls(path)]
    assert not found, ("dashboard/state computes; elements go in dashboard/widgets.py or the page:\n"
                       + "\n".join(found))


def test_the_draw_check_sees_calls(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import streamlit as st\nimport streamlit as s2\n"
                      "def f():\n    st.toggle('x')\n    s2.sidebar.caption('y')\n    st.session_state.get('z')\n")
    assert [h.split(": ", 1)[1] for h in _drawing_calls(sample)] == ["st.toggle(...)", "s2.sidebar.caption(...)"]


# ------------------------------------------------------------------ long functions
MAX_FUNCTION_LINES = 100

#: functions of explainers/ still longer than MAX_FUNCTION_LINES (signature, docstring and body):
#: split one into named steps and take it off; never add one. Compiled kernels do not count.
LONG_FUNCTIONS_ALLOWED: set[str] = set()  # every one has been split


def _is_compiled(func: ast.FunctionDef) -> bool:
    """Decorated with numba's njit / jit (bare, called, or as numba.<anything>)."""
    for dec in func.decorator_list:
        name = ast.unparse(dec.func if isinstance(dec, ast.Call) else dec)
        if name in ("njit", "jit") or name.startswith("numba.") or name.endswith((".njit", ".jit")):
            return True
    return False


def long_functions(paths, limit: int = MAX_FUNCTION_LINES, root: Path = ROOT) -> dict[str, int]:
    """``{"path::Class.func": lines}`` of the functions (methods and nested ones too) longer than limit."""
    found = {}
    for path in paths:
        rel = path.relative_to(root).as_posix()

        def walk(node, prefix):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    qual = prefix + child.name
                    lines = child.end_lineno - child.lineno + 1
                    if lines > limit and not _is_compiled(child):
                        found[f"{rel}::{qual}"] = lines
                    walk(child, qual + ".")
                elif isinstance(child, ast.ClassDef):
                    walk(child, prefix + child.name + ".")
                else:
                    walk(child, prefix)

        walk(ast.parse(path.read_text(), filename=str(path)), "")
    return found


def test_the_long_function_finder_counts_lines_and_skips_kernels(tmp_path):
    sample = tmp_path / "sample.py"
    body = "    x = 1\n" * 3  # a def line and three lines: 4 lines
    method = "    def method(self):\n" + "        x = 1\n" * 3
    sample.write_text("import numba\nfrom numba import njit\n"
                      f"def plain():\n{body}@njit(cache=True)\ndef kernel():\n{body}"
                      f"@numba.jit\ndef kernel2():\n{body}class C:\n{method}"
                      f"def outer():\n    def inner():\n{body.replace('    ', '        ')}")
    found = long_functions([sample], limit=3, root=tmp_path)
    assert found == {"sample.py::plain": 4, "sample.py::C.method": 4, "sample.py::outer": 5,
                     "sample.py::outer.inner": 4}
    assert long_functions([sample], limit=4, root=tmp_path) == {"sample.py::outer": 5}


def test_no_long_functions_in_explainers_or_dashboard():
    """Functions longer than a screen are split into named steps (validate, plan, compute,
    assemble); the allow-list of those still too long may only shrink."""
    found = long_functions(sorted((ROOT / "explainers").rglob("*.py")) + sorted((ROOT / "dashboard").rglob("*.py")))
    new = {k: v for k, v in found.items() if k not in LONG_FUNCTIONS_ALLOWED}
    fixed = sorted(LONG_FUNCTIONS_ALLOWED - set(found))
    assert not new, (f"functions over {MAX_FUNCTION_LINES} lines: split them into named steps:\n"
                     + "\n".join(f"  {k}: {v} lines" for k, v in sorted(new.items())))
    assert not fixed, "no longer too long; take them off LONG_FUNCTIONS_ALLOWED:\n  " + "\n  ".join(fixed)


# ------------------------------------------------------------------ long files
MAX_FILE_LINES = 900


def test_no_file_in_explainers_or_dashboard_past_900_lines():
    """A module a reader can hold: past about 900 lines, split it by concept (as segments/ was)."""
    long = {p.relative_to(ROOT).as_posix(): n for p in sorted((ROOT / "explainers").rglob("*.py"))
            + sorted((ROOT / "dashboard").rglob("*.py")) if (n := len(p.read_text().splitlines())) > MAX_FILE_LINES}
    assert not long, f"files over {MAX_FILE_LINES} lines: " + ", ".join(f"{k} ({v})" for k, v in long.items())
