"""A file whose modules are ONNX model-local functions (``torch.onnx.export(..., export_modules_as_functions=...)``)
inlined into its graph, each node named by the module whose call it sits in.

Such a file's graph holds call nodes (``op_type`` = the module's class, ``domain`` = its Python module); every value
inside a function is out of reach of a graph output, so no module inside could be compared.  ONNX Runtime inlines the
functions itself before it runs the graph; drifttui does the same in its in-memory copy, and names each inlined node
as the TorchScript exporter names a node of that module (``/stem/stem.0/lin/Gemm``), so the scope mapping reads it.

Which module a call stands for: a call node of the main graph is named by the TorchScript scope of its own module
(``/body/Log1pScaled``; the root's call is misnamed by the exporter, ``/head/DeepRes``, and is known by its class);
a call inside a function has only a local name (``Block_10``), so the k-th call of class C inside module M is M's
k-th descendant of class C in module order with no module between them of a class the file has a function for
(a ``ModuleList`` is never called: its items are the calls).  A call no module matches keeps its caller's scope."""
from __future__ import annotations

from typing import Any, Optional

_DOMAINS = ("", "ai.onnx")


def unqualified(qualname: str) -> str:
    """The segment the TorchScript exporter names a module by: its last non-numeric name and what follows
    (``stem.0`` -> ``stem.0``, ``stem.0.lin`` -> ``lin``)."""
    atoms = qualname.split(".")
    for i in range(len(atoms) - 1, -1, -1):
        if not atoms[i].isnumeric():
            return ".".join(atoms[i:])
    return qualname


class _Inliner:
    """One pass over the main graph: call nodes expanded recursively, everything else copied, renamed."""

    def __init__(self, model: Any, modules: dict[str, str]) -> None:
        self.funcs = {(f.domain, f.name): f for f in model.functions}
        self.modules = modules                         # qualified name -> class name, in module order
        self.used = {v for n in model.graph.node for v in [*n.input, *n.output]}
        self.used |= {v.name for v in [*model.graph.input, *model.graph.output, *model.graph.initializer]}
        self.node_names = {n.name for n in model.graph.node if not n.op_type or (n.domain, n.op_type) not in self.funcs}
        self.nodes: list[Any] = []
        self.calls = 0

    def fresh(self, want: str, taken: Optional[set[str]] = None) -> str:
        """``want``, or ``want_1``, ``want_2`` ... as the TorchScript exporter tells a module's repeated op apart."""
        taken = self.used if taken is None else taken
        name, k = want, 1
        while name in taken:
            name, k = f"{want}_{k}", k + 1
        taken.add(name)
        return name

    def top_module(self, node: Any) -> Optional[str]:
        """The module a call node of the main graph stands for, from its TorchScript name and class."""
        if node.op_type == self.modules.get(""):
            segs = node.name.split("/")[1:-1]
            if not segs or self.modules.get(self._walk(segs) or "\0") != node.op_type:
                return ""
        found = self._walk(node.name.split("/")[1:-1]) if node.name.startswith("/") else None
        return found if found is not None and self.modules.get(found) == node.op_type else None

    def _walk(self, segs: list[str]) -> Optional[str]:
        cur = ""
        for seg in segs:
            nxt = next((q for q in self._below(cur) if unqualified(q) == seg), None)
            if nxt is None:
                return None
            cur = nxt
        return cur

    def _below(self, cur: str) -> list[str]:
        pre = f"{cur}." if cur else ""
        return [q for q in self.modules if q and q.startswith(pre) and q != cur]

    def child(self, parent: Optional[str], cls: str, k: int) -> Optional[str]:
        """The k-th module of class ``cls`` below ``parent`` (the shallowest ones, in module order)."""
        if parent is None:
            return None
        called = {name for _, name in self.funcs}
        pre = f"{parent}." if parent else ""
        found: list[str] = []
        for q in self._below(parent):
            between = q[len(pre):].split(".")[:-1]         # the modules between parent and q: none called
            outer = [pre + ".".join(between[:i + 1]) for i in range(len(between))]
            if self.modules[q] == cls and not any(self.modules.get(o) in called for o in outer):
                found.append(q)
        return found[k] if k < len(found) else None

    def expand(self, nodes: Any, names: dict[str, str], attrs: dict[str, Any], module: Optional[str],
               path: list[str], meta: list[Any]) -> None:
        seen: dict[str, int] = {}
        for node in nodes:
            func = self.funcs.get((node.domain, node.op_type))
            if func is None:
                self.nodes.append(self.copy(node, names, attrs, path, meta))
                continue
            k = seen.get(node.op_type, 0)
            seen[node.op_type] = k + 1
            sub = self.top_module(node) if module is None and not path else self.child(module, node.op_type, k)
            self.inline(node, func, names, attrs, sub, path, meta)

    def inline(self, call: Any, func: Any, names: dict[str, str], attrs: dict[str, Any], sub: Optional[str],
               path: list[str], meta: list[Any]) -> None:
        self.calls += 1
        if sub is not None:
            sub_path = self.path_of(call, sub, path)
        else:
            sub_path = call.name.split("/")[1:-1] if call.name.startswith("/") else path
        inner: dict[str, str] = {"": ""}
        for formal, actual in zip(func.input, call.input):
            inner[formal] = names.get(actual, actual)
        for formal, actual in zip(func.output, call.output):
            if actual and names and actual not in names:       # the caller's own value, made by this call
                names[actual] = self.fresh(f"/{'/'.join(path)}/{actual}" if path else f"/{actual}")
            inner[formal] = names.get(actual, actual) if actual else self.fresh(f"/{'/'.join(sub_path)}/{formal}")
        given = {a.name: a for a in func.attribute_proto}
        given.update({a.name: self.resolved(a, attrs) for a in call.attribute})
        self.expand(func.node, inner, given, sub, sub_path, list(call.metadata_props) or meta)

    def path_of(self, call: Any, sub: str, path: list[str]) -> list[str]:
        if sub == "":
            return []
        if not path and call.name.startswith("/"):
            return call.name.split("/")[1:-1]
        return [*path, unqualified(sub)]

    def resolved(self, attr: Any, attrs: dict[str, Any]) -> Any:
        """``attr`` with a reference to the caller's attribute replaced by its value (None: not given)."""
        if not attr.ref_attr_name:
            return attr
        got = attrs.get(attr.ref_attr_name)
        if got is None:
            return None
        import onnx

        out = onnx.AttributeProto()
        out.CopyFrom(got)
        out.name = attr.name
        return out

    def copy(self, node: Any, names: dict[str, str], attrs: dict[str, Any], path: list[str],
             meta: list[Any]) -> Any:
        import onnx

        out = onnx.NodeProto()
        out.CopyFrom(node)
        del out.input[:], out.output[:], out.attribute[:]
        inside = bool(names)
        out.input.extend(names.get(v, v) for v in node.input)
        for v in node.output:
            if inside and v and v not in names:
                names[v] = self.fresh(f"/{'/'.join(path)}/{v}" if path else f"/{v}")
            out.output.append(names.get(v, v))
        for a in node.attribute:
            got = self.resolved(a, attrs)
            if got is not None:
                out.attribute.append(got)
        if inside:                     # inside a function: named by its module's scope, its metadata inherited
            out.name = self.fresh(f"/{'/'.join(path)}/{node.op_type}" if path else f"/{node.op_type}",
                                  self.node_names)
            if not node.metadata_props:
                out.metadata_props.extend(meta)
        return out


def inline_functions(model: Any, modules: dict[str, str]) -> int:
    """Inline ``model``'s local functions in place (``modules``: the torch model's qualified module names -> class
    names, in module order, the root ``""``); the number of calls inlined (0: no function called)."""
    if not model.functions:
        return 0
    inl = _Inliner(model, modules)
    inl.expand(model.graph.node, {}, {}, None, [], [])
    if inl.calls == 0:
        return 0
    _imports(model)
    del model.graph.node[:]
    model.graph.node.extend(inl.nodes)
    del model.functions[:]
    return inl.calls


def _imports(model: Any) -> None:
    """The functions' own opset imports kept (a domain only they used), the functions' domains dropped."""
    have = {o.domain: o.version for o in model.opset_import}
    for func in model.functions:
        for o in func.opset_import:
            if o.domain not in have:
                model.opset_import.add(domain=o.domain, version=o.version)
                have[o.domain] = o.version
    dropped = {f.domain for f in model.functions} - set(_DOMAINS)
    keep = [o for o in model.opset_import if o.domain not in dropped]
    del model.opset_import[:]
    model.opset_import.extend(keep)
