"""The issue-30 audit's forms (tests/causes/audit_forms.py) through the engine: origin, the torch op named,
class, verified, and a repaired file that checks."""
from __future__ import annotations

import pytest

from tests.causes.form_suite import explained_forms


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "audit_forms")


def test_a_call_on_an_argument_the_file_folded_is_not_the_op_named(explained):
    """``bank.unsqueeze(0)`` of an argument the TorchScript file holds as a folded initializer is computed right
    (the file holds its value): the op named is the similarity that overflows (before: ``torch.Tensor.unsqueeze``,
    every node of the scope given to it)."""
    _, _, _, result, exp = explained("bank_cosine", "torchscript")
    assert result.verdict == "drift" and result.drift_origin.module == "score"
    head = exp.findings[0]
    assert head.severity == "error" and head.module == "score"
    assert head.torch_op == "torch.cosine_similarity", (head.torch_op, head.message)
    assert "torch's cosine_similarity" in head.message and "unsqueeze" not in head.message.split(":")[0]
    assert head.check == "lowering" and head.verified is True
    assert not any("Unsqueeze" in n for n in head.evidence["torch_op_nodes"]), head.evidence["torch_op_nodes"]


def test_a_case_fed_by_a_child_s_output_still_names_the_torch_op(tmp_path_factory):
    """The origin's case starts after its child ``proj`` (its feeds hold ``proj``'s output, not the module's
    input): the alignment starts from the call whose value the case is fed (before: no op named in a TorchScript
    file, only ``Greater /phase/Greater``)."""
    go = explained_forms(tmp_path_factory, "audit_forms", inputs={"phase_t": "six_rows"})
    _, _, _, result, exp = go("phase_t", "torchscript")
    assert result.verdict == "drift" and result.drift_origin.module == "phase"
    head = exp.findings[0]
    assert head.module == "phase" and head.verified is True and head.check == "lowering"
    assert head.torch_op == "torch.atan2", (head.torch_op, head.message)
    assert head.message.startswith("in torch's atan2 (torch.atan2, aten.atan2.default"), head.message
    # its ONNX nodes are the lowering's arithmetic up to its end, never the boolean mask alone (was: "ONNX Less"); the
    # end is the quadrant fix-up's last Where, which reads the x < 0 mask (session 42: align_graph.share_off)
    said = head.message.split("): ", 1)[0]
    assert "Atan" in said and "Where" in said, said


@pytest.mark.drifts
def test_a_call_whose_input_carries_a_long_chain_s_noise_is_named_when_its_own_lowering_differs(tmp_path_factory):
    """400 float32 steps before a ``floor_divide`` that TorchScript truncates: its input holds more than rounding
    noise, so the op was taken for an amplifier and the first noisy ``add`` of the chain named (``torch's add``).
    Replayed in torch on the file's values of its inputs, ``floor_divide`` floors where the file truncates: its
    own lowering is named."""
    go = explained_forms(tmp_path_factory, "audit_forms", inputs={"long_chain": "four_rows"})
    _, _, _, result, exp = go("long_chain", "torchscript")
    assert result.verdict == "drift" and result.drift_origin.module == "body"
    head = exp.findings[0]
    assert head.module == "body" and head.verified is True
    assert head.torch_op == "torch.floor_divide", (head.torch_op, head.message)
    assert head.message.startswith("in torch's floor_divide"), head.message
