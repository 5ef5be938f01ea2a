"""Drive the real TUI in tmux at 80x24 (TERM=xterm-256color) and check what a user sees:

1. `drifttui demo` (the real engine) opens on the drift;
2. pressing `3` shows step 3's fix (`→ fix:`) on screen;
3. ctrl+p, typing "determinism", lists the Determinism action with its key;
4. ctrl+s shows the prompt with its default path (a focused Input's border once hid it);
5. Enter on the origin opens the drill-down (the worst channels);
6. `q` during a rerun exits in under 3 s.

    .venv/bin/python scripts/tmux_check.py [--size 80x24] [--samples 4] [--keep-log]

Exit code 0 when every check passes; 1 with the failing check and the last screen otherwise.
`make tui-check` runs it; tests/tui/test_tmux.py runs it when DRIFTTUI_TMUX=1.
"""
from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class Check(Exception):
    pass


class Tmux:
    def __init__(self, width: int, height: int, command: str) -> None:
        self.name = f"drifttui-check-{uuid.uuid4().hex[:8]}"
        env = {**os.environ, "PYTHONPATH": str(ROOT), "TERM": "xterm-256color"}
        subprocess.run(["tmux", "new-session", "-d", "-s", self.name, "-x", str(width), "-y", str(height),
                        "-e", f"PYTHONPATH={ROOT}", command], check=True, env=env, cwd=str(ROOT))
        subprocess.run(["tmux", "set-option", "-t", self.name, "remain-on-exit", "on"], check=True)

    def screen(self) -> str:
        out = subprocess.run(["tmux", "capture-pane", "-p", "-t", self.name], capture_output=True, text=True)
        return out.stdout

    def keys(self, *keys: str, literal: bool = False) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, *(["-l"] if literal else []), *keys], check=True)

    def dead(self) -> bool:
        out = subprocess.run(["tmux", "display-message", "-p", "-t", self.name, "#{pane_dead}"],
                             capture_output=True, text=True)
        return out.stdout.strip() == "1"

    def wait_for(self, what: str, timeout: float, label: str) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            screen = self.screen()
            if what in screen:
                return screen
            if self.dead():
                break
            time.sleep(0.2)
        raise Check(f"{label}: {what!r} not on screen after {timeout:.0f}s\n{self.screen()}")

    def close(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)


def run_checks(width: int, height: int, samples: int) -> list[str]:
    cmd = f"{shlex.quote(sys.executable)} -m drifttui demo --samples {samples}"
    tmux = Tmux(width, height, cmd)
    passed = []
    try:
        tmux.wait_for("DRIFT", 240, "the demo's first run")
        tmux.wait_for("n=", 5, "the configuration line")
        passed.append("demo opens on the drift")
        tmux.keys("3")
        screen = tmux.wait_for("→ fix:", 240, "step 3's fix after pressing 3")
        passed.append("step 3's fix is visible after pressing 3: "
                      + next(line.strip() for line in screen.splitlines() if "→ fix:" in line)[:60])
        tmux.keys("C-p")
        time.sleep(0.5)
        tmux.keys("determinism", literal=True)
        screen = tmux.wait_for("(d)", 10, "ctrl+p 'determinism'")
        if "Determinism" not in screen:
            raise Check(f"ctrl+p: no Determinism entry\n{screen}")
        passed.append("ctrl+p finds 'determinism' with its key (d)")
        tmux.keys("Escape")
        time.sleep(0.5)
        tmux.keys("C-s")                    # the one-line prompt shows its default path
        tmux.wait_for("drifttui-report.json", 10, "ctrl+s prompt's default path")
        tmux.keys("Escape")
        time.sleep(0.5)
        tmux.keys("g", "Enter")             # the drill-down of the origin
        screen = tmux.wait_for("worst channels", 60, "the drill-down after Enter on the origin")
        passed.append("ctrl+s shows its default path; Enter on the origin: "
                      + next(line.strip() for line in screen.splitlines() if "worst channels" in line)[:50])
        tmux.keys("Escape")
        time.sleep(0.5)
        tmux.keys("z")                      # a rerun with zero input: a real capture
        tmux.wait_for("⟳", 10, "the rerun starting")
        start = time.monotonic()
        tmux.keys("q")
        while not tmux.dead():
            if time.monotonic() - start > 10:
                raise Check(f"q during a rerun: still running after 10 s\n{tmux.screen()}")
            time.sleep(0.05)
        took = time.monotonic() - start
        if took >= 3:
            raise Check(f"q during a rerun took {took:.1f} s (limit 3 s)")
        passed.append(f"q during a rerun exits in {took:.2f} s")
    finally:
        tmux.close()
    return passed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Check the TUI over tmux at 80x24 with the real engine.")
    parser.add_argument("--size", default="80x24")
    parser.add_argument("--samples", type=int, default=4)
    args = parser.parse_args(argv)
    if shutil.which("tmux") is None:
        print("tmux_check: tmux is not installed (apt-get install tmux)", file=sys.stderr)
        return 2
    width, height = (int(v) for v in args.size.lower().split("x"))
    try:
        for line in run_checks(width, height, args.samples):
            print(f"ok   {line}")
    except Check as exc:
        print(f"FAIL {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
