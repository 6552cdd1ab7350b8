"""Moving through the kernels of a real model stays as fluid as a minimal Textual app.

The 12-layer GPT-2 bundle (70 kernels, 134 launches, ~1.5k FX nodes; tests/fixtures/gpu/gpt2) is
opened and the selection moved down and up its kernels list, each move re-marking the FX graph,
the source files and the output code. The same keys are pressed, the same way (`await pilot.press`),
into a minimal Textual app (a Static and one binding) in the same run; the ratio is the figure
(target <= 1.2x). The app's own time per key (key event to the frame drawn) is printed beside it.
The keys start 0.5 s after the explorer is shown (kernel sources the user may move to are lexed in the
pauses); the first keys draw each kernel for the first time and make the p95. Moving runs no garbage
collection (ui/gcpolicy.py): the collection a pause runs afterwards is timed and printed too.

    python benchmarks/model_keys.py [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from startup import KeyClock, p95, press_timed  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
GPT2 = REPO / "tests" / "fixtures" / "gpu" / "gpt2"
KEYS = ["down"] * 40 + ["up"] * 20


def minimal_app():
    from textual.app import App
    from textual.binding import Binding
    from textual.widgets import Static

    class Minimal(App):
        BINDINGS = [Binding("down,up", "step")]
        count = 0

        def compose(self):
            yield Static("0", id="n")

        def action_step(self) -> None:
            self.count += 1
            self.query_one("#n", Static).update(str(self.count))

    return Minimal()


async def minimal_keys() -> tuple[list[float], list[float]]:
    app = minimal_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(0)
        clock = KeyClock(app)
        presses = await press_timed(pilot, KEYS)
    return presses, clock.per_key_ms()


async def model_keys() -> tuple[list[float], list[float], int, float]:
    from kernelscope.ui.app import make_app
    from kernelscope.ui.screens.explorer import ExplorerScreen

    app = make_app(str(GPT2))
    async with app.run_test(size=(160, 48)) as pilot:
        while not isinstance(app.screen, ExplorerScreen):
            await pilot.pause(0)
        await pilot.pause(0.5)
        first = app.screen.kernel
        clock = KeyClock(app)
        presses = await press_timed(pilot, KEYS)
        moved = first is not None and app.screen.kernel is not first
        # What the moves left for the GC (ui/gcpolicy.py): the collection the next pause runs, timed here.
        reclaim = app.screen.move_gc.reclaim()
    return presses, clock.per_key_ms(), int(moved), reclaim


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    ours, ours_in, base, base_in, reclaims = [], [], [], [], []
    for _ in range(args.runs):  # alternate, so a slow stretch of the host hits both
        p, k, moved, reclaim = asyncio.run(model_keys())
        reclaims.append(reclaim)
        if not moved:
            print("the selection did not move: the benchmark is broken", file=sys.stderr)
            return 1
        ours += p
        ours_in += k
        p, k = asyncio.run(minimal_keys())
        base += p
        base_in += k
    med = statistics.median
    print(f"kernels list of a 12-layer GPT-2 (70 kernels, 134 launches), {len(KEYS)} keys x {args.runs} runs")
    print(f"{'measure':<36}{'kernelscope':>12}{'minimal':>10}{'ratio':>8}")
    print(f"{'pilot.press, median':<36}{med(ours):>10.1f}ms{med(base):>8.1f}ms{med(ours) / med(base):>8.2f}"
          "   target <= 1.2")
    print(f"{'pilot.press, p95':<36}{p95(ours):>10.1f}ms{p95(base):>8.1f}ms{p95(ours) / p95(base):>8.2f}")
    print(f"{'in app: key to frame, median':<36}{med(ours_in):>10.1f}ms{med(base_in):>8.1f}ms")
    print(f"{'in app: key to frame, p95':<36}{p95(ours_in):>10.1f}ms{p95(base_in):>8.1f}ms")
    print(f"moves collect no garbage; the full collection at the next pause (once per 200 moves): "
          f"{med(reclaims):.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
