"""Run every benchmark in this folder (bench_*.py), one process each, and print their output.

    .venv/bin/python benchmarks/run_all.py [--only NAME[,NAME]] [-- extra args for every benchmark]

`make bench` calls this.  Exit status: non-zero when a benchmark failed to run (goals missed are
reported by the benchmarks themselves).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="", help="comma-separated benchmark names (e.g. bench_engine)")
    ap.add_argument("extra", nargs=argparse.REMAINDER, help="arguments passed to every benchmark after --")
    args = ap.parse_args()
    extra = [a for a in args.extra if a != "--"]
    wanted = {n.strip() for n in args.only.split(",") if n.strip()}
    scripts = sorted(p for p in HERE.glob("bench_*.py") if not wanted or p.stem in wanted)
    failed = []
    for script in scripts:
        print(f"\n######## {script.name} ########", flush=True)
        t = time.perf_counter()
        code = subprocess.call([sys.executable, str(script), *extra], cwd=str(HERE.parent))
        print(f"######## {script.name}: exit {code}, {time.perf_counter() - t:.0f} s", flush=True)
        if code != 0:
            failed.append(script.name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
