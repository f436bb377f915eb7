#!/usr/bin/env python3
"""Instruction counts of the server per window of turns, under callgrind (issue 14).

Wall-clock and CPU-time figures are noisy on a shared machine; instruction counts are not.
This drives `bench.py`'s scenarios against a server started under
`valgrind --tool=callgrind` and dumps the profile at window boundaries
(`callgrind_control --dump`), so each dump holds exactly one window's cost:

  decay   N turns in one session (default 1000, windows of 100): dumps after create,
          after turn W, after turn N-W (the middle) and after turn N
  text    N text turns in one session after 5 warm-up turns (default 300)
  create  N `session.create` after one warm-up session (default 200)

Usage: python3 tests/bench/profile_turns.py MODE [N] [OUTDIR]
Prints the instructions per turn (or per create) of each window and their ratio; the dumps
(`OUTDIR/cg.out.<pid>.<k>`) can be read with `callgrind_annotate --inclusive=yes`.
Needs valgrind; SKIPPER_BIN / FAKE_MODEL_BIN as for bench.py.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402


def dump(pid: int, label: str) -> None:
    subprocess.run(["callgrind_control", f"--dump={label}", str(pid)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def total_ir(path: Path) -> int:
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("totals:") or line.startswith("summary:"):
            return int(line.split()[1])
    raise bench.BenchError(f"no totals in {path}")


def dumps(out: Path, pid: int) -> list[Path]:
    files = [p for p in out.glob(f"cg.out.{pid}.*") if re.fullmatch(r"\d+", p.suffix[1:])]
    return sorted(files, key=lambda p: int(p.suffix[1:]))


def main() -> int:
    mode = sys.argv[1] if len(sys.argv) > 1 else "decay"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else {"decay": 1000, "text": 300, "create": 200}[mode]
    out = Path(sys.argv[3] if len(sys.argv) > 3 else "target/callgrind").absolute()
    out.mkdir(parents=True, exist_ok=True)
    window = min(100, n // 4) if mode == "decay" else n
    env = bench.Env()
    target = bench.Target("skipper", ["valgrind", "--tool=callgrind", "--quiet",
                                      f"--callgrind-out-file={out}/cg.out.%p", str(bench.SKIPPER_BIN)])
    s = env.start(target)
    try:
        bench.handshake(s)
        pid = s.pid
        marks: list[tuple[str, int]] = []  # (label, how many units the window holds)
        if mode == "create":
            bench.create_session(s, timeout=120)
            dump(pid, "setup")
            for _ in range(n):
                bench.create_session(s, timeout=120)
            time.sleep(0.5)  # index writes behind the creates
            dump(pid, "creates")
            marks = [("setup", 0), ("creates", n)]
        else:
            sid = bench.create_session(s, timeout=120)
            if mode == "text":
                bench.run_text_turns(env, s, [sid], 5, {"text": "ok"})
                dump(pid, "setup")
                bench.run_text_turns(env, s, [sid], n, {"text": "ok"})
                time.sleep(0.5)
                dump(pid, "turns")
                marks = [("setup", 0), ("turns", n)]
            else:
                dump(pid, "setup")

                def on_turn(i: int) -> None:
                    if i == window:
                        dump(pid, "first")
                    elif i == n - window:
                        dump(pid, "middle")

                bench.run_text_turns(env, s, [sid], n, {"text": "ok"}, on_turn=on_turn)
                dump(pid, "last")
                marks = [("setup", 0), ("first", window), ("middle", n - 2 * window), ("last", window)]
        files = dumps(out, pid)
        if len(files) < len(marks):
            raise bench.BenchError(f"expected {len(marks)} dumps, found {len(files)} in {out}")
        per = {}
        for (label, units), path in zip(marks, files[-len(marks):]):
            ir = total_ir(path)
            if units:
                per[label] = ir / units
                print(f"{label:8} {units:5} units  {ir / units / 1e6:8.3f} M instructions each   {path}")
        if mode == "decay":
            print(f"last / first: {per['last'] / per['first']:.3f}")
    finally:
        s.close(timeout=60)
        env.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
