"""One source per fact (issue 29): the run defaults are Config's everywhere, the element-type sets and
the low-precision epsilons live in core/base/dtypes.py only, the tolerance rule has one text."""
import dataclasses
import inspect
import re

from tests.conftest import ROOT

from drifttui.core.result import Config


def test_the_cli_python_api_and_tui_defaults_are_configs():
    from drifttui.cli import build_parser
    from drifttui.cli_common import config_from_args
    from drifttui import python_api
    from drifttui.tui.widgets.layer_table import LayerTable

    want = Config(model="x")
    for command in ("check", "diagnose", "tui", "repro", "repair"):
        argv = [command, "x"] + (["--out", "o"] if command in ("repro", "repair") else [])
        got = config_from_args(build_parser().parse_args(argv))
        assert got == want, (command, got)
    params = inspect.signature(python_api.check).parameters
    for f in dataclasses.fields(Config):
        if f.name in params and f.default is not dataclasses.MISSING:
            assert params[f.name].default == f.default, f.name
    table = LayerTable()
    tol = table._thresholds
    assert tol == LayerTable.__init__.__globals__["thresholds"](
        LayerTable.__init__.__globals__["Tolerance"](want.atol, want.rtol))


# an ONNX element-type number set, or a low-precision epsilon, written anywhere but core/base/dtypes.py
_ELEM_SET = re.compile(r"(data_type|elem_type[s]?(\.get\([^)]*\))?|\.i|to)\s+(not\s+)?in\s+[\(\{]\s*\d+\s*,")
_INT_SET = re.compile(r"\{\s*2,\s*3,\s*4,\s*5,\s*6,\s*7,\s*12,\s*13\s*\}")
_EPS = re.compile(r"2(\.0)?\s*\*\*\s*-\s*(7|10|23)\b|finfo\((np|torch)\.(float16|bfloat16)\)\.eps")


def test_no_dtype_literal_set_or_precision_epsilon_outside_dtypes():
    offenders = []
    for path in sorted((ROOT / "drifttui").rglob("*.py")):
        if path.relative_to(ROOT).as_posix() == "drifttui/core/base/dtypes.py":
            continue
        docs = _docstring_lines(path)
        for k, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if k in docs:
                continue
            if _ELEM_SET.search(code) or _INT_SET.search(code) or _EPS.search(code):
                offenders.append(f"{path.relative_to(ROOT)}:{k}: {line.strip()}")
    assert offenders == [], "\n".join(offenders)


def test_the_lint_catches_what_it_is_for():
    """The patterns above are not vacuous: each form the issue named is caught."""
    for line in ("if t.data_type in (2, 3):", "_INT = {2, 3, 4, 5, 6, 7, 12, 13}",
                 "if index.elem_types.get(o) not in (10, 16):", "eps = 2.0 ** -10", "a.i in (10, 16)"):
        assert _ELEM_SET.search(line) or _INT_SET.search(line) or _EPS.search(line), line


def test_one_text_of_the_tolerance_rule():
    """The formula is written once (result.RULE_FORMULA); the help, the text and Markdown reports and
    the schema's rule all read it."""
    from drifttui.core.result import RULE_FORMULA, TOLERANCE_RULE
    from drifttui.cli_common import TOLERANCE_HELP

    assert RULE_FORMULA in TOLERANCE_RULE and RULE_FORMULA in TOLERANCE_HELP
    hits = []
    for path in sorted((ROOT / "drifttui").rglob("*.py")):
        for k, text in _user_strings(path):
            if re.search(r"atol\s*\+\s*rtol\s*[*·]\s*scale", text) and text != RULE_FORMULA:
                hits.append(f"{path.relative_to(ROOT)}:{k}")
    assert hits == []


def _docstring_lines(path):
    import ast

    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return out


def _user_strings(path):
    """(line, text) of the string literals of a module that are not docstrings (what a user reads)."""
    import ast

    tree = ast.parse(path.read_text())
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docs.add(id(first.value))
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def test_the_fold_handles_a_batchnorm_without_affine_weights():
    import numpy as np
    import torch

    from drifttui.core.prepare.plan.folding import fold_conv_bn

    conv, bn = torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4, affine=False).eval()
    bn.running_mean.uniform_(-1, 1)
    bn.running_var.uniform_(0.5, 2)
    w, b = fold_conv_bn(conv, bn)
    x = torch.randn(1, 3, 8, 8)
    with torch.no_grad():
        want = bn(conv(x)).numpy()
    got = torch.nn.functional.conv2d(x, torch.from_numpy(w), torch.from_numpy(b)).numpy()
    assert np.allclose(got, want, atol=1e-5)


_GAP = re.compile(r"np\.where\(.*==.*,\s*0(\.0)?,\s*np\.abs\(")


def test_the_element_gap_rule_is_written_once():
    """The largest |a - b| with equal pairs (NaN with NaN, equal infinities) at 0 is base/metrics.elementwise_gap's:
    the hook-routing check, the custom-module check and the weights' comparison call it, none repeats it."""
    assert _GAP.search("d = np.where((x == y) | (np.isnan(x) & np.isnan(y)), 0.0, np.abs(x - y))")
    hits = [f"{path.relative_to(ROOT)}:{k}" for path in sorted((ROOT / "drifttui").rglob("*.py"))
            if path.relative_to(ROOT).as_posix() != "drifttui/core/base/metrics.py"
            for k, line in enumerate(path.read_text().splitlines(), 1) if _GAP.search(line.split("#", 1)[0])]
    assert hits == []
