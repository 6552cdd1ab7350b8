"""``kernelscope run [-o OUT] [--graphs N] [--timeout S] -- COMMAND...``: run any program (a training
script, ``python -m pkg``, torchrun) with private TORCH_TRACE and caches, and make what it compiled
into a bundle (kernelscope/capture/program.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kernelscope.errors import UsageError
from kernelscope.textsafe import one_line, printable
from kernelscope.units import plural

HELP = "run any program (python train.py ..., torchrun ...) and make what it compiles into a bundle"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from kernelscope.capture.spec import MODES

    p.add_argument("-o", "--out", help="bundle folder to write (default: ./kernelscope-captures/NAME-TIME); "
                                       "a job of several ranks writes OUT/rank0, OUT/rank1, ...")
    p.add_argument("--force", action="store_true", help="replace an existing bundle at -o")
    p.add_argument("--graphs", type=int, metavar="N",
                   help="stop the program once N graphs have compiled and their first calls returned")
    p.add_argument("--timeout", type=float, metavar="S", help="stop the program after S seconds")
    p.add_argument("--rank", type=int, metavar="N", help="a multi-rank job (torchrun): only rank N's bundle")
    p.add_argument("--mode", choices=MODES, default="default",
                   help="the torch.compile mode the program uses (reduce-overhead: also record CUDA graph logs)")
    p.add_argument("--no-ui", action="store_true", help="print the summary instead of opening the explorer")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND...", help="the program and its arguments")


def _name(command: list[str]) -> str:
    """The default -o folder's name: the script's (or module's, or program's) name in letters, digits,
    '-' and '_' only, so a name holding escapes, a newline or a quote names no folder with them."""
    import re

    from kernelscope.capture.program import python_script

    script, module = python_script(command)
    name = Path(script).stem if script else (module or Path(command[0]).name).replace(".", "_")
    return re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_-")[:60] or "run"


def run(args: argparse.Namespace) -> int:
    from kernelscope.bundle.io import fresh_path
    from kernelscope.capture.program import ProgramRun, RunError

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise UsageError("no command: put it after --, e.g. kernelscope run --graphs 2 -- python train.py")
    out = Path(args.out) if args.out else fresh_path("kernelscope-captures", _name(command))
    quiet = args.quiet

    def progress(event: dict) -> None:
        if quiet or event.get("phase") not in ("compile", "stopped"):
            return
        print(f"  {one_line(event['phase']):<9} {one_line(event.get('message', ''), 300)}", file=sys.stderr,
              flush=True)

    if not args.no_ui and not _terminal():
        # A script or a CI job (stdin /dev/null, stdout a pipe): the explorer would draw into the pipe and
        # wait for keys forever.
        print("kernelscope: no terminal (stdin or stdout is not one): running as --no-ui, the summary is printed "
              "instead of the explorer", flush=True)
    elif not args.no_ui:
        ui = _run_in_ui(args, command, out)
        if ui is not None:
            return ui
    job = ProgramRun(command, out, graphs=args.graphs, timeout=args.timeout, rank=args.rank, mode=args.mode,
                     replace=args.force, on_event=progress)
    try:
        result = job.run()
    except RunError as exc:
        raise UsageError(one_line(str(exc))) from exc
    except KeyboardInterrupt:  # a second Ctrl-C while the bundle was being written
        print("kernelscope: run interrupted while writing the bundle; nothing was written", file=sys.stderr)
        return 130
    if _print_outcome(result):
        return 2
    from kernelscope.show import summary_text

    for b in result.bundles:
        sys.stdout.write(printable(summary_text(b)))
    return 0


def _terminal() -> bool:
    """Whether the explorer has a terminal to draw on and read keys from."""
    try:
        return sys.stdin is not None and sys.stdout is not None and sys.stdin.isatty() and sys.stdout.isatty()
    except (ValueError, OSError):  # a closed stream
        return False


def _print_outcome(result) -> bool:
    """What the run made, one line a bundle on stdout; a failure is one line on stderr, said once, with
    where its bundle (the program's logs) is. True when it failed."""
    if result.status != "ok":
        failed = next((b for b in result.bundles if b.status != "ok"), None)
        where = result.outs[result.bundles.index(failed)] if failed is not None else None
        kept = f" (its bundle, with the program's logs: {one_line(where)})" if where is not None else ""
        print(f"kernelscope: {one_line(result.message, 600)}{kept}", file=sys.stderr)
        return True
    from kernelscope.bundle.origin import command_text

    for b, where in zip(result.bundles, result.outs):
        rank = f" rank {b.target['rank']}" if "rank" in b.target and len(result.outs) > 1 else ""
        print(f"ran {one_line(command_text(b.target, 120))}{rank}: {plural(len(b.graphs), 'graph')}, "
              f"{plural(len(b.kernels), 'kernel')} in {result.seconds:.1f} s; {one_line(result.message)} "
              f"-> {one_line(where)}")
    return False


def _run_in_ui(args: argparse.Namespace, command: list[str], out: Path) -> int | None:
    """The explorer opens at once on the program's progress (kernelscope/ui/screens/run.py), then on its
    bundle. None: no explorer in this install (the caller prints the summary instead)."""
    import asyncio

    from kernelscope.bundle.io import BundleError, check_out
    from kernelscope.capture.lifeline import install_parent_signal_handlers, received, stop_unwinding, unwind_with
    from kernelscope.capture.program import check_command

    try:
        from kernelscope.ui.app import make_app
        from kernelscope.ui.screens.run import RunJob
    except ImportError:
        print("kernelscope: the explorer is not available in this install; printing the summary instead",
              file=sys.stderr)
        return None
    try:  # what cannot start is one line here, before the UI takes the terminal
        check_command(command)
        check_out(out, replace=args.force)
        job = RunJob(command, out, graphs=args.graphs, timeout=args.timeout, rank=args.rank, mode=args.mode,
                     replace=args.force)
    except BundleError as exc:  # RunError is one
        raise UsageError(one_line(str(exc))) from exc
    app = make_app(run_job=job)
    install_parent_signal_handlers()  # closing the terminal (SIGHUP) or SIGTERM ends the program too

    def end_ui(signum: int) -> None:
        # In the main thread, inside Textual's loop: the app is asked to end (its driver restores the
        # terminal), then the job writes what compiled below; the handler already killed the program.
        loop = asyncio.get_running_loop()
        loop.call_soon_threadsafe(app.exit, None, 128 + signum)

    unwind_with(end_ui)
    try:
        app.run()
    finally:
        stop_unwinding(end_ui)
        if not job.done and job.running and not received:  # the UI ended while the program ran (ctrl+q, a crash)
            try:
                print("kernelscope: the explorer closed while the program ran: stopping it, writing what it "
                      "compiled", file=sys.stderr, flush=True)
            except OSError:  # the terminal is gone
                pass
        job.cancel()
        try:
            job.join()  # and wait for what it compiled to be written
        except KeyboardInterrupt:
            pass
    if job.error:
        print(f"kernelscope: {one_line(job.error)}", file=sys.stderr)
        return 2
    if job.result is None:
        return int(app.return_code or 0)
    if _print_outcome(job.result):
        return 2
    return int(app.return_code or 0)
