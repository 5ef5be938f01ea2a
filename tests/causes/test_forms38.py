"""Upstream drift forms inside real architectures' own code (tests/causes/forms38.py, session 27): transformers
model classes from small seeded configs, a batch the user pads as batched generation and serving do; the drift is
in the library's own attention path (a boolean mask with fully masked rows; torch's SDPA gives 0 there, the dynamo
exporter's lowering a finite average).  All inside deep models (30-46 module calls).  The TorchScript files are right.

First run, before any engine change (the held-out measure), then after session 27's mechanisms:

| pair (dynamo) | first run: origin / class / verified / repair passes check | after |
|---|---|---|
| llama_leftpad | right / lowering / **no** ("no patch among 0 tried") / - | verified (core ATen decomposition) / ok |
| qwen2_leftpad | right / lowering / **no** (0 tried) / - | verified / ok |
| mistral_leftpad | right / lowering / **no** (0 tried) / - | verified / ok |
| gpt2_leftpad | **wrong** (``h.0.attn.c_proj``, a view named) / - / "verified" for c_proj / no file | unchanged |
| clip_leftpad | right / lowering / yes (TorchScript re-export) / **drift** | verified / ok |
| bert_empty_row | right / lowering / yes (TorchScript re-export) / **no file** (an input without a file value) | verified / ok |

First run: origin 5/6, class by mechanism 5/6, verified (rightly) 2/6, repair passes check 0/6; clean controls 4/4.
After: origin 5/6, class 5/6, verified 5/6, repaired 5/6, clean controls 4/4.  What moved them:
``locate/call_structure.py`` (Llama/Qwen2/Mistral attention is called with keyword arguments and a ``(cos, sin)``
tuple: the re-export and the FX program were handed the flat tensors positionally, 0 patches tried),
``propose/siblings.py`` (the same lowering sits in every layer's attention: repair grafted the origin's only, the
next layer drifted), ``onnx/edit/graft/scopes.py`` (the repaired file's children had no nodes of their own and
``q_proj`` was paired with the attention's output: a file matching torch to 5e-7 was called a drift) and a call
input paired with the file through the call that produced it.  Left: GPT-2's origin (GPT2Attention's SDPA output
reaches its ``c_proj`` child through a view whose ONNX value the plan gives to ``c_proj``: issue 30 point 6).

Held out, written after the mechanisms (not in the figures above): ``opt_leftpad`` and ``phi_leftpad`` (dynamo).

Session 28 (issue 30 point 6): origin 6/6 and OPT's right (``prepare/plan/absorbed_inputs.py``: ``c_proj``'s input,
merged into its own Reshape, is split from the attention at the value it reads; same-shaped inputs paired by content:
OPT's decoder had its position ids compared with the mask).  OPT verified and repaired (a fresh sample feeds the
re-export without the inputs its graft baked in).  GPT-2's cause: no patch holds on fresh samples (said so).

Session 28 (gpt2why): GPT-2 verified (TorchScript re-export) and repaired: 6/6 verified, 6/6 repaired. Its
TorchScript re-export was right on every sample (1e-9 on samples 0-4); what failed was torch's side. The origin,
called with keyword arguments, is re-exported through a wrapper module (``call_structure.as_called``) that was
created in training mode; the TorchScript exporter puts the module in eval mode and afterwards back in the
wrapper's mode, recursively: GPT-2's attention (its dropouts 0.1, BERT's called plainly, without a wrapper) was
left in training mode, so every later torch forward of the fresh samples ran its dropout (0.009-0.013 off, outputs
~0.01). The wrapper now takes the module's mode, and an export leaves every module in the mode it found it
(``model/export.kept_modes``).
"""
from __future__ import annotations

import pytest

from tests.causes.form_suite import (assert_clean, assert_verified_and_repaired, deep_forms, explained_forms,
                                     params)

_DECOMPOSED = ("lowering", "reexport", {"decompose": "core_aten"}, "scaled_dot_product_attention")
_TORCHSCRIPT = ("lowering", "reexport", {"exporter": "torchscript"}, "scaled_dot_product_attention")
# (model, exporter) -> (class, patch op, what the patch changed, words of the message)
VERIFIED = {("llama_leftpad", "dynamo"): _DECOMPOSED, ("qwen2_leftpad", "dynamo"): _DECOMPOSED,
            ("mistral_leftpad", "dynamo"): _DECOMPOSED, ("clip_leftpad", "dynamo"): _TORCHSCRIPT,
            ("bert_empty_row", "dynamo"): _TORCHSCRIPT, ("gpt2_leftpad", "dynamo"): _TORCHSCRIPT}
ORIGIN = {"llama_leftpad": "model.layers.0.self_attn", "qwen2_leftpad": "model.layers.0.self_attn",
          "mistral_leftpad": "model.layers.0.self_attn", "clip_leftpad": "model.encoder.layers.0.self_attn",
          "bert_empty_row": "model.encoder.layer.0.attention.self", "gpt2_leftpad": "model.h.0.attn",
          "phi_leftpad": "model.layers.0.self_attn", "opt_leftpad": "model.decoder.layers.0.self_attn"}
INPUTS = {"llama_rightpad": "right_padded", "bert_padded": "right_padded", "bert_empty_row": "empty_row",
          **{m: "left_padded" for m in ("llama_leftpad", "qwen2_leftpad", "mistral_leftpad", "gpt2_leftpad",
                                        "clip_leftpad", "gemma2_leftpad", "opt_leftpad", "phi_leftpad")}}
CLEAN = [("llama_rightpad", "dynamo"), ("bert_padded", "dynamo"), ("gemma2_leftpad", "dynamo"),
         ("llama_leftpad", "torchscript")]
# held out after the mechanisms (opt: its first run named the decoder, below; verified once its origin was right
# and a fresh sample fed the re-export without the inputs its graft baked in, session 28)
HELD_OUT = {("phi_leftpad", "dynamo"): _DECOMPOSED, ("opt_leftpad", "dynamo"): _DECOMPOSED}


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    return explained_forms(tmp_path_factory, "forms38", inputs=INPUTS)


@pytest.mark.parametrize("form", params(VERIFIED, set()))
def test_a_library_attention_form_is_explained_verified_and_repaired(explained, form):
    assert_verified_and_repaired(explained, form, VERIFIED[form], ORIGIN[form[0]])


@pytest.mark.parametrize("form", params(HELD_OUT, set()))
def test_a_held_out_library_form_is_explained_verified_and_repaired(explained, form):
    assert_verified_and_repaired(explained, form, HELD_OUT[form], ORIGIN[form[0]])


@pytest.mark.parametrize("form", params(CLEAN, set()))
def test_the_clean_controls_have_no_error_finding(explained, form):
    assert_clean(explained, form)


@pytest.mark.drifts
def test_opt_names_its_attention_module(explained):
    _, _, _, result, _ = explained("opt_leftpad", "dynamo")
    assert result.drift_origin.module == ORIGIN["opt_leftpad"]


@pytest.mark.drifts
def test_every_form_sits_inside_a_deep_model(explained):
    forms = list(VERIFIED)
    assert deep_forms(explained, forms) == forms
