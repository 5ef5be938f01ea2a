"""Issue 30 point 6 inside a Conv+BatchNorm unit: a folded weight that is not the model's is said as the member
whose own tensor differs, by unfolding it (the BatchNorm contributes one factor per output channel)."""
import torch

from drifttui.core.explain.causes.propose.edits.weights import fold_member
from drifttui.core.prepare.plan.folding import fold_conv_bn


def _unit():
    torch.manual_seed(3)
    conv, bn = torch.nn.Conv2d(4, 6, 3), torch.nn.BatchNorm2d(6).eval()
    with torch.no_grad():
        bn.running_var.uniform_(0.5, 2.0)
        bn.weight.uniform_(0.5, 1.5)
    return conv, bn


def test_an_edited_conv_element_names_the_conv():
    conv, bn = _unit()
    w, _ = fold_conv_bn(conv, bn)
    edited = w.copy()
    edited[2, 1, 0, 2] += 0.3
    said = fold_member(edited, w, "blk.conv", "blk.bn")
    assert "blk.conv's own weight differs (first at [2, 1, 0, 2])" in said


def test_a_channel_factor_names_the_batchnorm():
    conv, bn = _unit()
    with torch.no_grad():
        other = torch.nn.BatchNorm2d(6).eval()
        other.load_state_dict(bn.state_dict())
        other.running_var[4] *= 1.7          # what a wrong running_var does to the fold
    w, _ = fold_conv_bn(conv, bn)
    file_w, _ = fold_conv_bn(conv, other)
    said = fold_member(file_w, w, "blk.conv", "blk.bn")
    assert "channel 4): blk.bn's scale" in said and "not blk.conv's weight" in said


def test_the_same_weight_says_nothing():
    conv, bn = _unit()
    w, _ = fold_conv_bn(conv, bn)
    assert fold_member(w.copy(), w, "blk.conv", "blk.bn") == ""
