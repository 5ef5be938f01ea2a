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
