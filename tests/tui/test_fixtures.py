"""The recorded TUI fixtures must come from the engine as it is now, not from an older one."""
from __future__ import annotations

from tests.tui.replay import ENGINE_SOURCES, ENGINE_STAMP, engine_fingerprint


def test_fixtures_were_recorded_by_this_engine():
    assert ENGINE_STAMP.is_file(), "no fixture stamp: run `make fixtures`"
    recorded = ENGINE_STAMP.read_text().strip()
    assert recorded == engine_fingerprint(), (
        f"the TUI fixtures were recorded by an older engine ({', '.join(ENGINE_SOURCES)} changed since): "
        "run `make fixtures` (and `make screenshots`), then review the snapshot changes")


def test_fingerprint_follows_the_engine_sources(tmp_path):
    for rel in ENGINE_SOURCES:
        p = tmp_path / rel
        if rel.endswith(".py"):
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text("x = 1\n")
        else:
            p.mkdir(parents=True)
            (p / "a.py").write_text("x = 1\n")
    before = engine_fingerprint(tmp_path)
    assert engine_fingerprint(tmp_path) == before
    (tmp_path / "drifttui" / "core" / "a.py").write_text("x = 2\n")
    assert engine_fingerprint(tmp_path) != before
