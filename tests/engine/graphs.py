"""onnx.helper graphs for the mapping tests: nodes carrying dynamo-style module scopes."""
from onnx import helper


def scoped_node(op, ins, outs, name, scopes=None):
    """A node with ``pkg.torch.onnx.name_scopes`` metadata (what torch's dynamo exporter writes)."""
    n = helper.make_node(op, ins, outs, name=name)
    if scopes is not None:
        p = n.metadata_props.add()
        p.key = "pkg.torch.onnx.name_scopes"
        p.value = repr(scopes)
    return n
