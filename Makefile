# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
# The CPU build of torch. Elsewhere: TORCH_SPEC="torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
# (or a CUDA wheel index) — see README "Installing torch".
TORCH_SPEC ?= torch==2.13.0

.PHONY: demo test test-faults test-models test-deploy test-bisect test-drifts test-triton triton-server install install-dev install-models install-deploy bench fuzz screenshots fixtures tui-check lint clean

# Each step says what it does before it starts: the whole install takes a minute or more, and pip
# runs --quiet, so without these lines `make demo` / `make test` would sit silent.
STEP = @echo "==> "

$(VENV)/.installed: pyproject.toml
	$(STEP)"[1/4] Python venv in $(VENV)"
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(STEP)"[2/4] upgrading pip"
	@$(PIP) install --quiet --upgrade pip
	$(STEP)"[3/4] installing $(TORCH_SPEC) (the largest download: about a minute)"
	@$(PIP) install --quiet $(TORCH_SPEC)
	$(STEP)"[4/4] installing drifttui and its dependencies (onnx, onnxruntime, textual, ...)"
	@$(PIP) install --quiet -e .
	@touch $@
	$(STEP)"drifttui installed in $(VENV)"

# Bytecode for the installed packages, once: where PYTHONDONTWRITEBYTECODE is set (as on our CI
# machines) nothing writes it, and every test process would compile torch from source (~3 s each,
# ~9 s more when torch._dynamo is imported). A file that does not compile is simply compiled at
# import, so compileall's status is ignored.
$(VENV)/.installed-dev: $(VENV)/.installed
	$(STEP)"[dev 1/4] installing the test tools (pytest, pytest-xdist, syrupy, import-linter, ...)"
	@$(PIP) install --quiet -e ".[dev]"
	$(STEP)"[dev 2/4] installing the real-architecture suite's libraries (transformers, timm)"
	@$(MAKE) --no-print-directory install-models
	$(STEP)"[dev 3/4] installing the deployment tools (onnxsim, onnxslim, float16 converters, diffusers)"
	@$(MAKE) --no-print-directory install-deploy
	$(STEP)"[dev 4/4] compiling the installed packages' bytecode once (about a minute)"
	-@$(PY) -m compileall -q -j 0 $(VENV)/lib > /dev/null 2>&1
	@touch $@

# The real-architecture suite (tests/archs): transformers, and timm WITHOUT torchvision (its PyPI
# wheels are CUDA builds here; tests/archs/tvshim.py stands in for the imports timm makes). A
# constraints file pins the torch already installed, so pip never swaps it for another build.
install-models: $(VENV)/.installed
	@$(PY) -c "import torch; print('torch==' + torch.__version__.split('+')[0])" > $(VENV)/torch-constraint.txt
	$(STEP)"installing transformers (torch pinned by $(VENV)/torch-constraint.txt)"
	@$(PIP) install --quiet -c $(VENV)/torch-constraint.txt -e ".[models]"
	$(STEP)"installing timm without its dependencies (no torchvision)"
	@$(PIP) install --quiet --no-deps timm==1.0.31

# the deployment tools (tests/deploy): simplifiers, float16 converters, diffusers, constrained to the
# installed torch like the models extra
install-deploy: $(VENV)/.installed
	@$(PY) -c "import torch; print('torch==' + torch.__version__.split('+')[0])" > $(VENV)/torch-constraint.txt
	$(STEP)"installing the deployment tools (torch pinned by $(VENV)/torch-constraint.txt)"
	@$(PIP) install --quiet -c $(VENV)/torch-constraint.txt -e ".[deploy]"

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

demo: $(VENV)/.installed
	$(STEP)"starting the debugger on the built-in example resnet18-bf16 (q quits)"
	@$(VENV)/bin/drifttui demo

test: $(VENV)/.installed-dev
	$(STEP)"running the test suite on 2 workers (a few minutes)"
	$(PY) -m pytest -n 2 -q tests
	$(STEP)"checking the import contracts (lint-imports)"
	$(VENV)/bin/lint-imports

test-faults: $(VENV)/.installed-dev
	DRIFTTUI_FAULTS=1 $(PY) -m pytest -q -p no:xdist tests/engine/test_signals.py tests/ci/test_faults.py

# the long tail of tests/archs (every architecture, both exporters), with the coverage table
test-models: $(VENV)/.installed-dev
	rm -f .pytest_cache/arch-table.md
	DRIFTTUI_ARCH_TABLE=.pytest_cache/arch-table.md $(PY) -m pytest -q -p no:xdist -m models tests/archs
	@echo "| model | exporter | calls | mapped | fused | not exported | unmapped | time |"
	@cat .pytest_cache/arch-table.md

# the long tail of tests/deploy (every deployment tool, both exporters, clean and drifted files): about 600
# points, hours on 2 cores; run a selection (-k an architecture or a tool) directly with pytest (docs/deploy.md)
test-deploy: $(VENV)/.installed-dev
	$(PY) -m pytest -q -p no:xdist -m deploy tests/deploy tests/compose

# the pipeline bisect and the tolerance advisor (tests/compose: real simplifiers, ORT passes, the zoo)
test-bisect: $(VENV)/.installed-dev
	$(PY) -m pytest -q -p no:xdist -m "deploy or models or not (deploy or models)" tests/compose

# the long tail of tests/causes/test_real_drifts.py, test_upstream_drifts.py and test_generic_drifts.py (every real
# exporter / ORT drift form and control; the generic ones and test_forms32.py / 33 / 34 / 35: forms no catalogue entry covers;
# test_forms_special.py / test_forms_nan.py / test_forms_dof.py: held-out forms of the special functions, the NaN-skipping
# selection kernels and the degrees-of-freedom reductions; test_forms36.py: forms of nn modules and functional layers;
# test_forms37.py: ONNX Runtime's long float32 reductions, GridSample at NaN coordinates, a wrong torch decomposition;
# test_forms38.py: forms inside transformers' own attention code; test_forms39.py: a long float32 cumsum, integer powers
# past 2**53, Tensor.any of floats; test_forms_inplace.py: in-place updates through a view TorchScript loses;
# test_forms40a.py / test_forms40b.py: antialiased resizes, roll, batch statistics in eval, attention over nothing;
# test_forms_retyped.py: a lowering whose output type does not hold torch's values; test_forms40e.py: what a trace
# freezes from its example input: Python values, branches and sizes; test_forms40f.py: a blind first run on distance,
# loss, arithmetic and attention-masking forms, its misses on record as strict xfails; test_forms40h.py: a blind
# first run on arithmetic, cumulative and integer-conversion forms; test_forms_qat.py: quantisation-aware training,
# the model's own quantizers held to the float32 rule; test_forms40i.py: a blind first run on attention masking,
# distance, arithmetic, cumulative and integer-conversion forms, its misses on record as strict xfails;
# test_forms40j.py: a blind first run on loss, cumulative and distance forms in deep models; test_forms40k.py: a blind
# first run on float16 forms of real attention, rotary and RMSNorm code; test_forms40l.py: a blind first run on
# loss, cumulative and distance forms, a lowering on a dynamic size; test_forms40m.py: a blind first run on
# ONNX Runtime kernel and lowering forms, float floor_divide on multiples, its misses as strict xfails;
# test_forms40n.py: a blind first run on real library helpers (box IoU losses, DETR sine positions, wav2vec2 feature
# masks, last-token pooling): clean controls in deep models, no error finding and no false integer-Div warning;
# GPT-2 / Llama left-padded with their default use_cache=True, verified and repaired; test_forms40o.py: a blind
# first run on edge-value lowerings, a loss weight its dispatch drops and histc's bins; test_forms40p.py: a blind
# first run on integer conversions whose int64 -> int32 wrap ONNX Runtime's merged Cast pair drops; test_forms40q.py:
# a blind first run on float16 arithmetic, distance and loss forms whose Python scalar float16 cannot hold;
# test_forms40r.py: a blind first run on attention-masking, cumulative and integer-conversion clean controls in deep
# models, no false integer-Div warning on shifts and top-k rows, noise crossing a conversion named an integer step;
# test_forms40s.py: a blind first run on arithmetic, distance and loss forms whose + eps the dynamo optimizer drops;
# test_dropped_addend.py: that + eps named and put back on a small model; test_forms40t.py: a blind first run on
# normalization, pooling, sampling, indexing and sorting clean controls in deep models, a TorchScript If branch's
# wrong declared shape no longer a tool failure; test_forms40u.py: a blind first run on clamps the dynamo optimizer
# fuses into one Clip whose bounds cross; test_crossed_clip.py: that Clip split back on a small model;
# test_optimizer_rewrite.py: a dynamo optimizer rewrite nobody catalogued told as the optimizer's;
# test_forms40v.py: a blind first run on float64 times and positions whose Python numbers the file holds at float32
# precision; test_double_scalar.py: those numbers given back in double on one-line exports;
# test_forms40w.py: a blind first run on losses TorchScript's peephole fuses into one SoftmaxCrossEntropyLoss
# over the wrong axis; test_fused_call.py: the torch call such a fused node computes named on a small model;
# test_absorbed_orphan.py: a module with no node its consumer absorbed, compared with it as one unit;
# test_peephole_rewrite.py: a TorchScript peephole fusion told as the pass's, by the export without it;
# test_forms40x.py: a blind first run on float16 parameter norms the dynamo optimizer's constant folding sums in
# float16; test_folded_constant.py: that folded constant told on a small model;
# test_forms40y.py: a blind first run on diagonals of -inf-masked log-probabilities, which both exporters lower as an
# identity-mask product; test_mask_select.py: that product computed as a selection on a small model;
# test_moved_tail.py, test_contradicted_patch.py, test_fill_alignment.py, test_every_site.py, test_identity_value.py:
# the fuzzer's finds (benchmarks/fuzz_drifts.py): a lowering that goes on in a cat, a patch on nodes whose values equal torch's tried
# last, a finfo.min fill and a mask that vouched for a wrong distance, a kernel workaround needed at every site, an
# identity call's own node taken for a leak;
# test_forms40z.py: a blind first run on files the TorchScript exporter wrote at a pinned opset 11 (NaN through
# Not(Less), integer ops through float32); its two fixes' tests, test_nan_compare.py and test_pinned_opset.py, are
# in make test; test_forms41a.py: a blind first run on float64 buffers an in-place op reads, which TorchScript holds
# and computes with at float32; test_wide_operand.py: that node computed in float64 on one-line exports;
# test_forms41b.py: a blind first run on the dynamo path's machinery, a float arange that torchlib lowers on float32
# bounds and the optimizer folds with one element more; test_folded_count.py: that folded constant named and
# replaced by torch's value; test_forms41c.py: a blind first run on ONNX Runtime kernels that compute otherwise than
# the op on a right graph (Range's float32 running sum, Softmax's flushed subnormal probabilities); its fix's test,
# test_kernel64.py, is in make test; test_forms41d.py: a blind first run on recurrent modules as exported (a packed
# sequence's padding value the TorchScript lowering drops, a float16 recurrence whose per-step rounding ONNX Runtime
# drops); its fixes' tests, test_packed_padding.py and tests/engine/test_integer_pairing.py, are in make test;
# test_forms41e.py: a blind first run on dynamic shapes, a pooling window or a
# roll's shift taken from the example's size in a file that declares the dim dynamic; its fixes' tests,
# test_frozen_window.py and test_frozen_ints.py, are in make test; test_fuzz_schema_finds.py: the fuzzer's
# source-derived pool's finds of session 40, a narrowing dtype= argument rounded first and an int64 product ONNX
# Runtime saturates, both exporters, a shift told before the call after it, an integer angle verified by the
# promoting re-trace; their fixes' tests, test_round_first.py, test_int_prod.py, test_typed_lowering_end.py and
# test_promoted_retrace.py, are in make test; test_forms41f.py: a blind first run on export options and model
# states, a file exported in training mode (BatchNorm, InstanceNorm, Dropout, a spectral-norm parametrisation)
# and modules exported as ONNX local functions; its fixes' tests, test_train_mode.py and test_local_functions.py,
# are in make test; test_forms41g.py: a blind first run on mixed precision inside forward,
# torch.autocast regions whose float16 roundings ONNX Runtime's CPU drops where torch computes with them; its fixes'
# tests, test_autocast_orphan.py and test_opmath_inner.py, are in make test; test_forms42i.py: a blind first run on
# decoding-time code (logits processors, beam top-k, nucleus filtering, KV caches), tie orders said unrepairable and
# float16 logits processors before a top-k cut; its fixes' tests, test_multi_output_items.py and
# test_opmath_scalar.py, are in make test; test_forms42h.py: a blind first run on
# signal-processing front ends, a hamming_window the dynamo exporter folds from ONNX HammingWindow, STFT phases at
# atan2's boundary, a dropped addend on padded frames, truncating frame counts; its fixes' tests,
# test_folded_window.py and test_disowned_input.py, are in make test;
# test_overflowing_lowering.py, test_relowered_op.py: the fuzzer's source-derived pool's finds of session 42 (fuzzG), a
# dynamo logaddexp2 whose Pow overflows told as stability, not lowering, and elu's input_scale re-lowered by a make_fx
# re-trace through torch's own decomposition of the op named wrong, whose result no value is named after (their
# fast tests, with test_int_pow.py's negative exponents, are in make test);
# test_float64_downcast.py: the source-derived pool's find of session 43 (fuzzH), log2 brought back to float32 then
# tan near its poles: the float64 counterfactual keeps the module's cast to float32 in float64, stability verified
# (its fast tests, with test_direct_composite_call.py's argsort called directly and told as argsort, not as
# the sort it decomposes to, are in make test);
# test_forms43k.py: a blind first run on
# detection, segmentation and pose heads with plain-torch post-processing, tie orders the head creates (peak NMS
# zeros, saturated scores) said unrepairable and float16 box decodes at image coordinates; its fixes' tests,
# test_own_half_precision.py and test_saturated_ties.py, are in make test;
# test_forms43j.py: a blind first run on
# diffusion-model code as deployers export it (diffusers' UNet2DModel with a Gaussian-Fourier noise embedding, an LCM
# scheduler's scalings, a guided-diffusion sinusoid, all in float16: pi written in float16 beside ONNX Runtime's
# dropped roundings, a pow that overflows); its fix's test, test_scalar_and_rounding.py, is in make test;
# test_repeated_constant.py: the source-derived pool's find of session 44 (fuzzI), TorchScript's remainder(-1e4, x)
# whose dividend the Div and the Sub read as two equal Constant nodes: the unstable formula (fmod_remainder), verified
# and repaired (its fast tests, with test_cli_causes.py's repaired copy that no module owns, are in make test);
# test_forms44m.py: a blind first run on GNN, point-cloud and recommender code in plain torch (a truncating
# hash bucket, log1p of small rates, scatter_reduce mean, k-NN ties from padding, a forward that draws randint);
# its fixes' tests, test_integer_pairing.py and test_random_draws.py, are in make test;
# test_forms44l.py: a blind first run on state-space and recurrent models in plain torch (mamba.py's in-place
# parallel scan in TorchScript, minGRU's log-space scan: dynamo's logcumsumexp, float16 underflow and a float16
# logcumsumexp amid other ops); its fix's test, test_opmath_per_call.py, is in make test;
# test_forms44n.py: a blind first run on text-to-speech and vocoder code in plain torch (mu-law and RVC's coarse
# pitch of float16 values, ONNX Runtime's dropped float16 roundings flipping bins; the mu-law misses are strict xfails);
# test_forms44o.py: a blind first run on image pre- and post-processing baked into the model (HSV, dominant-channel
# masks, unsharp masks in float16: a float16 value ONNX Runtime's CPU reads unrounded between two module calls);
# its fix's test, test_unrounded_reads.py, is in make test;
# test_forms45q.py: a blind first run on LLM inference numerics in plain torch (GPTQ / int4 nibble unpacking by >>
# on the module's buffers, soft-capping before a temperature, W4A4 activation quantisation in float16); its fix's
# test, test_state_computed_otherwise.py, is in make test
# test_forms45p.py: a blind first run on optical-flow, stereo and warping code in plain torch (float16 flow warps,
# winner-take-all disparities and hand-written samplers whose coordinate roundings ONNX Runtime's CPU drops; a
# float16 affine warp torch computes less precisely); its fix's test, test_necessary_rounding.py, is in make test
# test_forms45s.py: a blind first run on quantisation-aware-training code exported with its fake-quantisers (float16
# LSQ / floor / amax quantisers, a residual requantised on a tie grid); its fixes' tests, test_opmath_stacked.py and
# test_quantize_torch.py, are in make test
test-drifts: $(VENV)/.installed-dev
	$(PY) -m pytest -q -p no:xdist -m drifts tests/causes/test_real_drifts.py tests/causes/test_upstream_drifts.py \
		tests/causes/test_generic_drifts.py tests/causes/test_forms32.py tests/causes/test_forms33.py \
		tests/causes/test_forms34.py tests/causes/test_forms_special.py tests/causes/test_special_forms.py \
		tests/causes/test_forms_nan.py tests/causes/test_forms_dof.py tests/causes/test_dof_forms.py \
		tests/causes/test_forms35.py tests/causes/test_forms36.py tests/causes/test_forms37.py tests/causes/test_forms38.py \
		tests/causes/test_forms39.py tests/causes/test_forms_inplace.py tests/causes/test_forms40a.py \
		tests/causes/test_forms40b.py tests/causes/test_forms40c.py tests/causes/test_forms40d.py \
		tests/causes/test_forms40e.py tests/causes/test_forms_retyped.py tests/causes/test_forms40f.py \
		tests/causes/test_forms40g.py tests/causes/test_forms40h.py tests/causes/test_forms_qat.py \
		tests/causes/test_forms40i.py tests/causes/test_forms40j.py \
		tests/causes/test_forms40k.py tests/causes/test_forms40l.py tests/causes/test_forms40m.py \
		tests/causes/test_forms40n.py tests/causes/test_forms40o.py tests/causes/test_forms40p.py \
		tests/causes/test_forms40q.py tests/causes/test_forms40r.py tests/causes/test_forms40s.py \
		tests/causes/test_dropped_addend.py tests/causes/test_forms40t.py \
		tests/causes/test_forms40u.py tests/causes/test_crossed_clip.py tests/causes/test_optimizer_rewrite.py \
		tests/causes/test_forms40v.py tests/causes/test_double_scalar.py tests/causes/test_forms40w.py \
		tests/causes/test_fused_call.py tests/causes/test_absorbed_orphan.py tests/causes/test_peephole_rewrite.py \
		tests/causes/test_forms40x.py tests/causes/test_folded_constant.py tests/causes/test_forms40y.py \
		tests/causes/test_mask_select.py tests/causes/test_moved_tail.py tests/causes/test_contradicted_patch.py \
		tests/causes/test_fill_alignment.py tests/causes/test_forms40z.py tests/causes/test_forms41a.py \
		tests/causes/test_wide_operand.py tests/causes/test_every_site.py tests/causes/test_identity_value.py \
		tests/causes/test_forms41b.py tests/causes/test_folded_count.py tests/causes/test_forms41c.py \
		tests/causes/test_forms41d.py tests/causes/test_forms41e.py tests/causes/test_fuzz_schema_finds.py \
		tests/causes/test_forms41f.py tests/causes/test_forms41g.py tests/causes/test_forms42i.py \
		tests/causes/test_forms42h.py tests/causes/test_folded_window.py tests/causes/test_overflowing_lowering.py \
		tests/causes/test_relowered_op.py tests/causes/test_float64_downcast.py tests/causes/test_forms43k.py \
		tests/causes/test_forms43j.py tests/causes/test_repeated_constant.py \
		tests/causes/test_forms44m.py \
		tests/causes/test_forms44l.py \
		tests/causes/test_forms44o.py \
		tests/causes/test_forms44n.py \
		tests/causes/test_forms45q.py tests/causes/test_forms45p.py \
		tests/causes/test_fuzz_schema_finds_j.py tests/causes/test_forms45r.py \
		tests/causes/test_forms45s.py tests/causes/test_forms45t.py \
		tests/causes/test_forms46v.py

# the live-server tests (tests/triton/test_live.py, marker triton): a real Triton server from PyTriton
# (nvidia-pytriton bundles tritonserver) in its own venv. It must be the operating system's own
# Python 3.11 (Debian's python3.11 + python3.11-venv): under a newer 3.11 build the Python backend's
# stub fails with "'_thread.RLock' object has no attribute '_recursion_count'" (docs/triton.md).
# The client side (tritonclient) is in the dev install. Servers listen on 127.0.0.1 only.
TRITON_PYTHON ?= /usr/bin/python3.11
TRITON_VENV   ?= .venv-triton-server
$(TRITON_VENV)/.installed:
	$(STEP)"building the PyTriton server venv in $(TRITON_VENV) with $(TRITON_PYTHON)"
	@test -x $(TRITON_PYTHON) || (echo "no $(TRITON_PYTHON): apt-get install python3.11 python3.11-venv" && false)
	@test -x $(TRITON_VENV)/bin/python || $(TRITON_PYTHON) -m venv $(TRITON_VENV)
	@$(TRITON_VENV)/bin/python -m pip install --quiet --upgrade pip
	@$(TRITON_VENV)/bin/python -m pip install --quiet nvidia-pytriton==0.7.0 onnxruntime==1.32.0 "numpy<2"
	@touch $@

triton-server: $(TRITON_VENV)/.installed

test-triton: $(VENV)/.installed-dev $(TRITON_VENV)/.installed
	DRIFTTUI_TRITON_PYTHON=$(TRITON_VENV)/bin/python $(PY) -m pytest -q -rs -p no:xdist -m triton tests/triton

bench: $(VENV)/.installed-dev
	$(PY) benchmarks/run_all.py

# the drift fuzzer (benchmarks/fuzz_drifts.py): random calls in issue 30's six families, scored on the ones that
# drift; FUZZ="--start 5000 --count 100" picks the seed range (tune on one range, judge on another), FUZZ="--pool
# schema" the source-derived pool (benchmarks/fuzz_schema.py: the ATen ops torchlib and TorchScript's symbolics lower)
fuzz: $(VENV)/.installed-dev
	PYTHONPATH=$(CURDIR) $(PY) benchmarks/fuzz_drifts.py $(FUZZ)

screenshots: $(VENV)/.installed-dev
	$(PY) scripts/screenshots.py

# re-record tests/tui/fixtures/ from the real engine (after an engine or report change)
fixtures: $(VENV)/.installed-dev
	$(PY) scripts/record_fixtures.py

# the real TUI in tmux at 80x24: fix visible after `3`, ctrl+p finds determinism, quick `q`
tui-check: $(VENV)/.installed-dev
	$(PY) scripts/tmux_check.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
