"""The source fix of a user's file names the exporter that wrote it: the run records it as read from the file
("torchscript (from the file's node names)"), and the export call keeps ``dynamo=False`` for it."""
from __future__ import annotations


def test_a_user_files_exporter_label_still_gives_the_export_call():
    from drifttui.core.explain.causes.deliver.source_fix import source_fix

    spec = {"op": "rewrite", "rewrite": "resize_opset11", "node": "/up/Resize"}
    said = source_fix(spec, 10, "torchscript (from the file's node names)")
    assert said == 'torch.onnx.export(model, args, "model.onnx", dynamo=False, opset_version=11)', said
    said = source_fix(spec, 10, "dynamo (from the file's metadata)")
    assert "dynamo=True" in said, said
    assert "dynamo=" not in source_fix(spec, 10, "unknown")
