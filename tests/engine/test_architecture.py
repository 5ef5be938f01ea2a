"""House rules: the engine never imports Textual; the TUI never imports torch/onnxruntime."""
import subprocess
import sys

from tests.conftest import ROOT


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint('\\n'.join(sys.modules))"],
                         capture_output=True, text=True, cwd=str(ROOT), check=True).stdout
    return set(out.split())


def test_engine_and_reports_do_not_import_textual():
    mods = _modules_after("import drifttui.core.pipeline, drifttui.report.text, drifttui.report.json_report, drifttui.cli")
    assert "torch" in mods
    assert not any(m == "textual" or m.startswith("textual.") for m in mods)


def test_engine_never_loads_the_front_ends():
    mods = _modules_after("import drifttui.core.pipeline, drifttui.core.explain, drifttui.core.explain.causes.deliver.repair, "
                          "drifttui.core.explain.causes.deliver.repro")
    assert not {"drifttui.api", "drifttui.cli", "drifttui.tui"} & mods


def test_import_contracts_hold():
    """The import-linter contracts in pyproject.toml (one layers contract over all of core/: no stage
    imports a later one; the layers inside prepare, plan, capture and explain; core free of the front
    ends and of Textual)."""
    from pathlib import Path

    exe = Path(sys.executable).with_name("lint-imports")
    out = subprocess.run([str(exe)], capture_output=True, text=True, cwd=str(ROOT),
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stdout[-3000:]
    assert "broken" in out.stdout and " 0 broken" in out.stdout


def _import_graph() -> dict[str, set[str]]:
    import grimp

    graph = grimp.build_graph("drifttui")
    return {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}


def _cycles(adj: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    for root in sorted(adj):
        if root in index:
            continue
        work = [(root, iter(sorted(adj[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(adj.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
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


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycles_anywhere_in_the_package():
    """Every import counts, function-level ones too: none may close a circle."""
    assert _cycles(_import_graph()) == []


def test_engine_imports_at_module_level():
    """A function-level import of a drifttui module in core/ would hide an arrow from the layers
    contract; the only ones allowed say why they are lazy (the examples build torch models)."""
    import ast

    lazy = []
    for path in sorted((ROOT / "drifttui" / "core").rglob("*.py")):
        lines = path.read_text().splitlines()
        for fn in ast.walk(ast.parse(path.read_text())):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                    [a.name for a in node.names] if isinstance(node, ast.Import) else []
                if any(n.startswith("drifttui") for n in names) and "# lazy:" not in lines[node.lineno - 1]:
                    lazy.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert lazy == []
