"""drifttui's own TorchScript export of a model with an op the exporter lowers only from a later opset than drifttui's
default 17 (``aten::bitwise_and``: GPTQ / AWQ nibble unpacking, session 45): exported at the opset torch's refusal
names, and said in a note, not a failed export."""
from __future__ import annotations

import onnx
import pytest
import torch


class _Nibbles(torch.nn.Module):
    def forward(self, x):
        return x * torch.bitwise_and(torch.bitwise_right_shift(x.to(torch.int32), 2), 3).float()


def test_an_op_the_default_opset_refuses_is_exported_at_the_opset_it_needs(tmp_path):
    from drifttui.core.model.export import TORCHSCRIPT_OPSET, export_model, opset_note

    path = export_model(_Nibbles(), (torch.arange(8.0),), {}, "torchscript", tmp_path)
    opset = next(o.version for o in onnx.load(str(path)).opset_import if o.domain in ("", "ai.onnx"))
    assert opset == 18 > TORCHSCRIPT_OPSET
    assert "from opset 18" in opset_note("torchscript", opset)
    assert opset_note("torchscript", TORCHSCRIPT_OPSET) == "" and opset_note("dynamo", 20) == ""


def test_an_opset_the_user_asked_for_is_not_changed(tmp_path):
    from drifttui.core.model.export import export_model
    from drifttui.errors import ModelError

    with pytest.raises(ModelError, match="opset version 17"):
        export_model(_Nibbles(), (torch.arange(8.0),), {}, "torchscript", tmp_path, opset=17)
