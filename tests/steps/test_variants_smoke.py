import pytest

EXPECTED_ORIGIN = {"eps": "norm.ln", "resize": "up", "bf16": "conv2", "avgpool": "pool", "gamma": "ls",
                   "padmode": "pad", "rmseps": "rms"}


@pytest.mark.parametrize("name", sorted(EXPECTED_ORIGIN))
def test_variant_origin(run, name):
    _, r = run(name)
    assert r.verdict == "drift"
    assert r.drift_origin is not None and r.drift_origin.module == EXPECTED_ORIGIN[name]


@pytest.mark.parametrize("name", ["clean", "clean2"])
def test_clean_is_clean(run, name):
    _, r = run(name)
    assert r.verdict == "ok", r.drift_origin
