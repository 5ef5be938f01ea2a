"""House rules: the engine never imports Textual; the TUI never imports torch/onnxruntime."""
import subprocess
import sys
from pathlib import Path

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



def _too_long(root: Path) -> list[str]:
    """Files past 400 lines and functions past 60 under ``root``, a function counted from its first decorator
    (or its ``def``) to its last line."""
    import ast

    found = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text()
        if len(text.splitlines()) > 400:
            found.append(f"{path.relative_to(root)}: {len(text.splitlines())} lines")
        for fn in ast.walk(ast.parse(text)):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([fn.lineno] + [d.lineno for d in fn.decorator_list])
                if fn.end_lineno - first + 1 > 60:
                    found.append(f"{path.relative_to(root)}:{fn.lineno} {fn.name}: {fn.end_lineno - first + 1} lines")
    return found


def test_no_file_past_400_lines_and_no_function_past_60():
    """The house rule: a file past ~400 lines or a function past ~60 holds more than one job."""
    assert _too_long(ROOT / "drifttui") == []


def test_the_size_rule_finds_a_long_file_and_a_long_function(tmp_path):
    (tmp_path / "ok.py").write_text("def f():\n" + "    x = 1\n" * 59)
    (tmp_path / "long_fn.py").write_text("@staticmethod\ndef g():\n" + "    x = 1\n" * 59)
    (tmp_path / "long_file.py").write_text("x = 1\n" * 401)
    assert _too_long(tmp_path) == ["long_file.py: 401 lines", "long_fn.py:2 g: 61 lines"]
