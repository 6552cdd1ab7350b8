"""A whole job at any size: `kernelscope open` of a large TORCH_TRACE against tlparse, and the UI on the result.

The large trace is built from a real one (tests/fixtures/gpu_train_gpt2: a transformers GPT-2 training
step on the H200, 3.4 MB, 2 Inductor graphs) repeated N times the way a long job accumulates compiled
frames: each copy's ``frame_id`` (and the compile ids and timestamps of its chromium events) shifted so
the copies read as distinct compiled frames, the interned file names written once.

In one run, on the same file, this prints:
1. `kernelscope open --no-ui -o ...` against `tlparse` (the PyPI wheel, installed into a scratch venv
   when missing): wall time and peak RSS of each (the child's ru_maxrss), and the ratio;
2. the UI's first frame on the resulting bundle against a minimal Textual app, each in a fresh process,
   kernelscope's bytecode compiled first (as an installed package has it: where PYTHONDONTWRITEBYTECODE
   is set, as on the 2-core box, every start would otherwise compile ~60 modules, ~0.13 s);
3. kernel-list keys (down, pagedown) pressed through Pilot in the explorer against a minimal app with
   one binding pressed the same way in the same run (median and p95 ratios): a run of moves, in which the
   other panes follow where the run stops (ui/screens/list_runs.py), and single moves after a pause, each
   drawn in every pane; then `/` finding the last kernel's name and `N` (the previous match, wrapping)
   its copy in the last graph;
4. the first frame again once a bench record (one row per kernel) is saved into the bundle, as after
   `kernelscope bench`, each start alternating with the minimal app's;
5. `kernelscope show` and `kernelscope report --format md` of the bundle (wall).

Run: .venv/bin/python benchmarks/trace_scale.py [--times 24 120] [--runs 3] [--no-tlparse] [--keep DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.job_trace import scale_trace  # noqa: E402  (the same job-sized trace the tests open)

FIXTURE = REPO / "tests" / "fixtures" / "gpu_train_gpt2" / "trace.log.gz"
TLPARSE_VERSION = "0.4.3"

def peak_rss_run(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, int, subprocess.CompletedProcess]:
    """Wall seconds, peak RSS in bytes (the child's own ru_maxrss, through a tiny wrapper) and the result."""
    wrapper = ("import resource, subprocess, sys, time; t0 = time.perf_counter(); "
               "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True); "
               "w = time.perf_counter() - t0; "
               "print(w, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024, r.returncode, file=sys.stderr); "
               "sys.stderr.write(r.stderr[-2000:])")
    proc = subprocess.run([sys.executable, "-c", wrapper, *cmd], capture_output=True, text=True, env=env)
    first, _, rest = proc.stderr.partition("\n")
    wall, rss, rc = first.split()
    return float(wall), int(rss), subprocess.CompletedProcess(cmd, int(rc), "", rest)


def tlparse_binary(scratch: Path) -> str | None:
    """tlparse: on PATH, else the PyPI wheel installed into ``scratch``/venv (None when it cannot be had)."""
    found = shutil.which("tlparse")
    if found:
        return found
    venv = scratch / "tlparse-venv"
    exe = venv / "bin" / "tlparse"
    if not exe.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        r = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", f"tlparse=={TLPARSE_VERSION}"],
                           capture_output=True, text=True)
        if r.returncode:
            print(f"tlparse {TLPARSE_VERSION} could not be installed ({r.stderr.strip()[-200:]}); skipping it",
                  file=sys.stderr)
            return None
    return str(exe)


MINIMAL_FIRST = """
import time; t0 = time.perf_counter()
from textual.app import App
from textual.widgets import Static
class Minimal(App):
    def compose(self):
        yield Static("hello")
    def on_mount(self):
        self.call_after_refresh(self.done)
    def done(self):
        print(f"{(time.perf_counter() - t0) * 1000:.1f}"); self.exit()
Minimal().run(headless=True, size=(160, 48))
"""

KERNELSCOPE_FIRST = """
import sys, time; t0 = time.perf_counter()
from kernelscope.ui.app import KernelscopeApp, make_app
class Timed(KernelscopeApp):
    def _first_frame(self):
        print(f"{(time.perf_counter() - t0) * 1000:.1f}"); self.exit()
app = make_app(sys.argv[1])
app.__class__ = Timed
app.run(headless=True, size=(160, 48))
"""


def first_frame_ms(code: str, *args: str) -> float:
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=600)
    try:
        return float(out.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        raise SystemExit(f"a first-frame child failed: {out.stderr.strip()[-600:]}") from None


KEYS = ["down"] * 30 + ["pagedown"] * 5 + ["up"] * 10
PAUSED_KEYS = ["down"] * 8 + ["pagedown"] * 2  # each after a pause: every pane follows it
PAUSE_S = 0.4  # longer than a run of moves waits (list_runs.FOLLOW_QUIET) and than lexing ahead waits


async def press_all(pilot, keys: list[str], pause: float = 0.0) -> list[float]:
    times = []
    for key in keys:
        if pause:
            await pilot.pause(pause)
        t0 = time.perf_counter()
        await pilot.press(key)
        times.append((time.perf_counter() - t0) * 1000)
    return times


async def minimal_keys() -> list[float]:
    from textual.app import App
    from textual.binding import Binding
    from textual.widgets import Static

    class Minimal(App):
        BINDINGS = [Binding(k, "step") for k in ("down", "up", "pagedown")]

        def compose(self):
            yield Static("0", id="n")

        def action_step(self) -> None:
            n = self.query_one("#n", Static)
            n.update(str(int(str(n.render())) + 1))

    async with Minimal().run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        return await press_all(pilot, KEYS), await press_all(pilot, PAUSED_KEYS, PAUSE_S)


async def explorer_keys(bundle: Path, needle: str) -> tuple[list[float], list[float], str]:
    from kernelscope.ui.app import make_app

    app = make_app(str(bundle))
    async with app.run_test(size=(160, 48)) as pilot:
        for _ in range(200):
            await pilot.pause(0.05)
            if type(app.screen).__name__ == "ExplorerScreen":
                break
        await pilot.pause(0.3)
        times = await press_all(pilot, KEYS)
        paused = await press_all(pilot, PAUSED_KEYS, PAUSE_S)
        await pilot.press("g", "slash")
        for ch in needle:
            await pilot.press(ch)
        await pilot.press("enter")
        await pilot.press("N")  # the first match is in the first graph that has it; the previous one wraps
        await pilot.pause(0.3)
        kernel = getattr(app.screen, "kernel", None)
        found = f"{kernel.graph}/{kernel.name}" if kernel is not None else ""
        return times, paused, found


def bench_every_kernel(bundle: Path) -> None:
    """A bench record of one row per kernel saved into ``bundle`` in place, as `kernelscope bench` saves one
    (synthetic times: a GPU box's bench of a job is what this stands for; the UI reads the record alike)."""
    from kernelscope.bundle.io import read_bundle, save_manifest

    b = read_bundle(bundle)
    b.extra["bench"] = {"device": "cuda", "method": "trace_scale (synthetic)", "run": {"per_kernel": [
        {"kernel_id": k.id, "name": k.name, "us": 1.5} for k in b.kernels]}}
    save_manifest(b, bundle)


def p95(values: list[float]) -> float:
    return sorted(values)[max(0, int(len(values) * 0.95) - 1)]


def compile_bytecode() -> None:
    """kernelscope's modules compiled into __pycache__, as pip leaves an installed package (Textual's are)."""
    import compileall

    compileall.compile_dir(str(REPO / "kernelscope"), quiet=1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--times", type=int, nargs="+", default=[24, 120],
                    help="copies of the fixture trace (default 24 120: an 82 MB and a 408 MB trace)")
    ap.add_argument("--runs", type=int, default=3, help="first-frame runs per app (median)")
    ap.add_argument("--no-tlparse", action="store_true", help="do not time tlparse")
    ap.add_argument("--no-ui", action="store_true", help="time open, show and report only")
    ap.add_argument("--keep", metavar="DIR", help="scratch folder to keep (default: a temporary one)")
    args = ap.parse_args()
    scratch = Path(args.keep or tempfile.mkdtemp(prefix="ks-trace-scale-"))
    scratch.mkdir(parents=True, exist_ok=True)
    tlparse = None if args.no_tlparse else tlparse_binary(scratch)
    ks = [sys.executable, "-m", "kernelscope"]
    rows = []
    for times in args.times:
        trace = scale_trace(FIXTURE, scratch / f"trace_x{times}.log", times)
        size = trace.stat().st_size
        bundle = scratch / f"bundle_x{times}"
        shutil.rmtree(bundle, ignore_errors=True)
        wall, rss, r = peak_rss_run(ks + ["open", str(trace), "--no-ui", "-o", str(bundle)])
        if r.returncode:
            print(f"kernelscope open failed: {r.stderr.strip()[-800:]}", file=sys.stderr)
            return 1
        opened = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""
        row = {"times": times, "MB": size / 1e6, "open_s": wall, "open_MB": rss / 1e6, "opened": opened}
        if tlparse:
            out = scratch / f"tl_x{times}"
            shutil.rmtree(out, ignore_errors=True)
            tw, trss, tr = peak_rss_run([tlparse, str(trace), "-o", str(out), "--overwrite", "--no-browser"])
            row.update(tl_s=tw, tl_MB=trss / 1e6, tl_rc=tr.returncode)
        t0 = time.perf_counter()
        subprocess.run(ks + ["show", str(bundle)], capture_output=True, text=True)
        row["show_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        subprocess.run(ks + ["report", str(bundle), "--format", "md"], capture_output=True, text=True)
        row["report_s"] = time.perf_counter() - t0
        if not args.no_ui:
            compile_bytecode()
            mins = [first_frame_ms(MINIMAL_FIRST) for _ in range(args.runs)]
            ours = [first_frame_ms(KERNELSCOPE_FIRST, str(bundle)) for _ in range(args.runs)]
            row.update(min_ms=statistics.median(mins), ui_ms=statistics.median(ours))
            from kernelscope.bundle.kernel_rows import kernel_entries

            entries = kernel_entries(json.loads((bundle / "bundle.json").read_text()), bundle)
            last = entries[-1] if entries else {}
            base, base_paused = asyncio.run(minimal_keys())
            keys, paused, found = asyncio.run(explorer_keys(bundle, last.get("name", "")))
            row.update(key_ratio=statistics.median(keys) / statistics.median(base), key_p95=p95(keys) / p95(base),
                       paused_ratio=statistics.median(paused) / statistics.median(base_paused),
                       paused_p95=p95(paused) / p95(base_paused),
                       found=found, needle=f"{last.get('graph')}/{last.get('name')}")
            bench_every_kernel(bundle)  # then the same bundle after a bench: its list has a time column
            pairs = [(first_frame_ms(MINIMAL_FIRST), first_frame_ms(KERNELSCOPE_FIRST, str(bundle)))
                     for _ in range(args.runs)]
            row.update(bmin_ms=statistics.median(p[0] for p in pairs), bui_ms=statistics.median(p[1] for p in pairs))
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)
    print_table(rows)
    if not args.keep:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


def print_table(rows: list[dict]) -> None:
    print("| trace | open | tlparse | open / tlparse | open RSS | tlparse RSS | show | report md | first frame / minimal "
          "| benched: first frame / minimal | keys median / p95 vs minimal | a key after a pause | `/` last kernel |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        tl = f"{r['tl_s']:.1f} s" if "tl_s" in r else "-"
        ratio = f"{r['open_s'] / r['tl_s']:.2f}x" if "tl_s" in r else "-"
        tl_rss = f"{r['tl_MB']:.0f} MB" if "tl_MB" in r else "-"
        ff = f"{r['ui_ms']:.0f} / {r['min_ms']:.0f} ms = {r['ui_ms'] / r['min_ms']:.2f}x" if "ui_ms" in r else "-"
        bff = f"{r['bui_ms']:.0f} / {r['bmin_ms']:.0f} ms = {r['bui_ms'] / r['bmin_ms']:.2f}x" if "bui_ms" in r else "-"
        keys = f"{r['key_ratio']:.2f}x / {r['key_p95']:.2f}x" if "key_ratio" in r else "-"
        paused = f"{r['paused_ratio']:.2f}x / {r['paused_p95']:.2f}x" if "paused_ratio" in r else "-"
        found = (f"found in {r['found'].split('/')[0]}" if r.get("found") == r.get("needle") else f"NOT found ({r.get('found')!r})") \
            if "needle" in r else "-"
        print(f"| {r['MB']:.0f} MB (x{r['times']}) | {r['open_s']:.1f} s | {tl} | {ratio} | {r['open_MB']:.0f} MB | "
              f"{tl_rss} | {r['show_s']:.1f} s | {r['report_s']:.1f} s | {ff} | {bff} | {keys} | {paused} | {found} |")


if __name__ == "__main__":
    sys.exit(main())
