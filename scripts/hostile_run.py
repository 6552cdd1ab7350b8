#!/usr/bin/env python
"""A fault and bad-input run against the real CLI (issue 14): bad targets, `--args`, output paths, kills,
corrupted bundles, TORCH_TRACE imports, serve, the UI and size limits; then what `run` starts, what a
bundle claims of itself and what reaches the terminal (issue 36).

Every case runs `python -m kernelscope ...` in a subprocess (with a timeout) inside a temp folder this
script makes and removes; HOME, TMPDIR and KERNELSCOPE_CACHE point into it, so nothing of the user's is at
risk. A case is clean when it exits as expected (0, or 2 with one line on stderr naming the problem),
prints no traceback and no "internal error", leaves no process, staging or work folder behind, keeps
every file the user had, and finishes in bounded time. "wrong message": the exit status was right but
the message was not one line or did not name the problem. Anything else failed.

    python scripts/hostile_run.py [--jobs N] [--only AREA[,AREA]] [--keep] [--list]

Prints a table (area, cases, clean, wrong message, failed), then one line per case that was not clean.
Exits 1 when any case failed or had a wrong message. A few cases compile for real (`--no-compile`
leaves them out).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "fixtures" / "gpu" / "add_relu"
TRACE_FIXTURE = REPO / "tests" / "fixtures" / "traces" / "mlp_train_cpu"
KERNEL = "triton_poi_fused_add_relu_0"
SECRET = "kernelscope-secret-outside-the-bundle"
TRACE_HEAD = "V0101 00:00:00.000000 1 torch/_logging/structured.py:1] "
PY = sys.executable

AREAS = ["bad targets", "bad --args", "output paths", "kills", "corrupted bundles", "TORCH_TRACE imports",
         "serve", "UI", "size",
         # round two (issue 22)
         "escapes", "loaders", "serve log", "replace under a kill", "full disks", "processes", "received bundles",
         "environment",
         # round three (issue 36)
         "bundle provenance", "run's terminal output", "run's processes", "stream sizes", "serve log file",
         "bundle code inputs", "no terminal", "messages"]


# -- what one case is, and how it is judged ---------------------------------------------------------

@dataclass
class Outcome:
    rc: int | None
    out: str
    err: str
    seconds: float
    timed_out: bool = False
    problems: list[str] = field(default_factory=list)  # failed
    wrong: list[str] = field(default_factory=list)     # wrong or misleading message


@dataclass
class Case:
    area: str
    name: str
    argv: Callable[[Path], list[str]] | None = None    # kernelscope arguments, given the case folder
    want: int | None = 2                                # exit status expected (None: 0 or 2 both fine)
    words: tuple[str, ...] = ()                         # each must appear (case-insensitive) in the message
    setup: Callable[[Path], None] | None = None
    check: Callable[[Path, Outcome], None] | None = None  # adds to outcome.problems / wrong
    runner: Callable[[Case, Path, dict], Outcome] | None = None  # a special run (kills, serve, UI)
    timeout: float = 60.0
    env: dict[str, str] = field(default_factory=dict)
    keep: tuple[str, ...] = ()                          # files (relative to the case folder) that must survive
    compiles: bool = False
    needs_non_root: bool = False                        # relies on file permissions (root ignores them)
    needs_mount: str | None = None                      # why it cannot mount here (tmpfs, bind): skipped
    skip: str = ""                                      # a tool it needs is missing: skipped, with this reason


def case_env(folder: Path, case: Case) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("TORCH_TRACE", "TORCH_LOGS", "KERNELSCOPE_DEVICE", "KERNELSCOPE_BIG"):
        env.pop(name, None)
    env.update(PYTHONPATH=str(REPO), HOME=str(folder / "home"), TMPDIR=str(folder / "tmp"),
               KERNELSCOPE_CACHE=str(folder / "cache"), KS_HOSTILE_CASE=f"{os.getpid()}:{folder.name}",
               PYTHONDONTWRITEBYTECODE="1", COLUMNS="120", NO_COLOR="1", TERM="dumb")
    # "@TMP" and "@FULL" in a case's environment: its own temp folder, the shared full tmpfs.
    env.update({k: v.replace("@TMP", str(folder / "tmp")).replace("@FULL", str(Mounts.full(folder.parent))
                                                                if "@FULL" in v else "@FULL")
                for k, v in case.env.items()})
    return env


def run_cli(argv: list[str], folder: Path, env: dict, timeout: float, stdin=subprocess.DEVNULL) -> Outcome:
    t = time.perf_counter()
    proc = subprocess.Popen([PY, "-m", "kernelscope", *argv], cwd=str(folder / "cwd"), env=env, stdin=stdin,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        timed_out = True
    return Outcome(None if timed_out else proc.returncode, out.decode(errors="replace"),
                   err.decode(errors="replace"), time.perf_counter() - t, timed_out)


def message_lines(err: str) -> list[str]:
    """stderr's lines, an argparse usage block (usage: ... then prog: error: ...) counted as its error line."""
    # A failed compile's second line says where its partial bundle is (marked failed): part of the design.
    lines = [line for line in err.splitlines() if line.strip() and "what was captured before the failure" not in line]
    if lines and lines[0].startswith("usage:"):
        errors = [line for line in lines if ": error: " in line]
        return errors or lines
    return lines


def judge(case: Case, folder: Path, o: Outcome) -> None:
    if o.timed_out:
        o.problems.append(f"no answer within {case.timeout:.0f} s")
    elif o.rc not in (0, 2, 130):
        o.problems.append(f"exit {o.rc}")
    text = o.err + o.out
    if "Traceback (most recent call last)" in text:
        o.problems.append("printed a traceback")
    if "internal error" in o.err:
        o.problems.append("said internal error")
    if not o.timed_out and case.want is not None and o.rc != case.want and o.rc in (0, 2):
        o.problems.append(f"exit {o.rc}, expected {case.want}")
    if not o.problems and o.rc == 2:
        lines = message_lines(o.err)
        if len(lines) != 1:
            o.wrong.append(f"{len(lines)} lines on stderr")
        else:
            missing = [w for w in case.words if w.lower() not in lines[0].lower()]
            if missing:
                o.wrong.append(f"does not say {' / '.join(repr(w) for w in missing)}")
    elif not o.problems and o.rc == 0 and case.want == 0:
        missing = [w for w in case.words if w.lower() not in (o.out + o.err).lower()]
        if missing:
            o.wrong.append(f"output lacks {' / '.join(repr(w) for w in missing)}")
    for rel in case.keep:
        if not (folder / rel).exists():
            o.problems.append(f"user file {rel} is gone")
    if SECRET in o.out or SECRET in o.err:
        o.problems.append("printed a file from outside the bundle")
    leftovers = [p.name for p in (folder / "tmp").glob("kernelscope-work-*")]
    leftovers += [str(p.relative_to(folder)) for p in folder.rglob(".kernelscope-tmp-*")]
    if leftovers and case.area != "kills":
        o.problems.append(f"left {', '.join(sorted(leftovers)[:3])}")
    alive = processes_of(folder)
    if alive:
        o.problems.append(f"left {len(alive)} process(es) running: {alive[:3]}")
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    if case.check is not None and not o.timed_out:
        try:
            case.check(folder, o)
        except Exception as exc:  # a check that cannot look counts against the case, not the harness
            o.problems.append(f"check failed: {exc.__class__.__name__}: {exc}")


def processes_of(folder: Path) -> list[int]:
    """Live processes started for this case (they carry its KS_HOSTILE_CASE in their environment)."""
    marker = f"KS_HOSTILE_CASE={os.getpid()}:{folder.name}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker in (entry / "environ").read_bytes().split(b"\0"):
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state not in ("Z", "X"):
                    found.append(int(entry.name))
        except (OSError, IndexError):
            continue
    return found


def run_case(case: Case, root: Path, index: int) -> Outcome:
    folder = root / f"c{index:03d}"
    for sub in ("home", "tmp", "cache", "cwd"):
        (folder / sub).mkdir(parents=True)
    env = case_env(folder, case)
    try:
        if case.setup is not None:
            case.setup(folder)
        if case.runner is not None:
            o = case.runner(case, folder, env)
        else:
            o = run_cli(case.argv(folder), folder, env, case.timeout)
    except Exception as exc:
        o = Outcome(None, "", "", 0.0)
        o.problems.append(f"harness: {exc.__class__.__name__}: {exc}")
        return o
    judge(case, folder, o)
    return o


# -- material: targets, bundles, traces ------------------------------------------------------------

def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
    return path


GOOD_FN = "def f(x):\n    return x + 1\n"


def target(name: str, text: str | bytes, fn: str = "f") -> tuple[Callable[[Path], None], Callable[[Path], str]]:
    return (lambda d: write(d / name, text)), (lambda d: f"{d / name}::{fn}")


def bundle(d: Path, name: str = "b") -> Path:
    out = d / name
    shutil.copytree(FIXTURE, out, symlinks=True)
    return out


def manifest(b: Path) -> dict:
    return json.loads((b / "bundle.json").read_text())


def edit(b: Path, change: Callable[[dict], None]) -> None:
    m = manifest(b)
    change(m)
    (b / "bundle.json").write_text(json.dumps(m))


def kernel_rel(b: Path) -> str:
    return manifest(b)["kernels"][0]["source"]


def _secret(d: Path) -> Path:
    return write(d / "secret.txt", SECRET + "\n")


def c_traversal(b: Path) -> None:
    _secret(b.parent)
    edit(b, lambda m: m["kernels"][0].__setitem__("source", "../secret.txt"))


def c_absolute(b: Path) -> None:
    s = _secret(b.parent)
    edit(b, lambda m: m["kernels"][0].__setitem__("source", str(s)))


def c_symlink(b: Path) -> None:
    s = _secret(b.parent)
    rel = kernel_rel(b)
    (b / rel).unlink()
    os.symlink(s, b / rel)


def c_symlink_dir(b: Path) -> None:
    _secret(b.parent)
    shutil.rmtree(b / "graphs")
    os.symlink(b.parent, b / "graphs")
    edit(b, lambda m: m["graphs"][0]["files"].__setitem__("output_code", "graphs/secret.txt"))


def c_type_mixed(b: Path) -> None:
    edit(b, lambda m: m["kernels"][0].__setitem__("name", 5))


def c_kernels_string(b: Path) -> None:
    edit(b, lambda m: m.__setitem__("kernels", "all"))


def c_deep(b: Path) -> None:
    edit(b, lambda m: m["extra"].__setitem__("x", json.loads("[" * 80 + "]" * 80)))


def c_deeper_than_parser(b: Path) -> None:
    text = (b / "bundle.json").read_text().rstrip()
    (b / "bundle.json").write_text(text[:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}\n")


def c_nan(b: Path) -> None:
    edit(b, lambda m: m["timings"].__setitem__("collect", math.nan))


def c_version_str(b: Path) -> None:
    edit(b, lambda m: m.__setitem__("version", "1"))


def c_version_future(b: Path) -> None:
    edit(b, lambda m: m.__setitem__("version", 99))


def c_missing_files(b: Path) -> None:
    (b / kernel_rel(b)).unlink()
    shutil.rmtree(b / "graphs")


def c_garbage(b: Path) -> None:
    (b / "bundle.json").write_bytes(bytes(range(256)) * 64)


def c_json_list(b: Path) -> None:
    (b / "bundle.json").write_text("[1, 2, 3]")


def c_no_manifest(b: Path) -> None:
    (b / "bundle.json").unlink()


def c_schema(b: Path) -> None:
    edit(b, lambda m: m.__setitem__("schema", "someone.else"))


def c_control_markup(b: Path) -> None:
    def change(m):
        m["kernels"][0]["name"] = "triton_\x1b]0;pwned\x07[bold red]k[/]``[x](http://evil.example)``<script>x</script>"
        m["graph_breaks"] = [{"reason": "[@click=app.quit]x\x1b[2J", "file": "/repo/samples/add_relu.py",
                              "line": 7, "code": "[/]"}]
    edit(b, change)


def c_binary_artifact(b: Path) -> None:
    (b / kernel_rel(b)).write_bytes(b"\x1b[2J\x1b]0;pwned\x07" + bytes(range(256)) * 16)


def c_sections(b: Path) -> None:
    def change(m):
        m.setdefault("extra", {})["compile_time"] = {"compiles": "x", "phases": [1], "total_s": 1.0}
        m["extra"]["fusion"] = ["not", "an", "object"]
    edit(b, change)


CORRUPTIONS: list[tuple[str, Callable[[Path], None], int | None, tuple[str, ...]]] = [
    # name, how, expected exit, words the message names
    ("traversal ../", c_traversal, 2, ("secret.txt", "refusing")),
    ("absolute path", c_absolute, 2, ("secret.txt", "refusing")),
    ("symlink out", c_symlink, 2, ("refusing",)),
    ("folder symlink out", c_symlink_dir, 2, ("refusing",)),
    ("type-mixed name", c_type_mixed, 2, ("kernels[0].name",)),
    ("kernels a string", c_kernels_string, 2, ("bundle.kernels",)),
    ("deep nesting", c_deep, 2, ("deep",)),
    ("nesting past the parser", c_deeper_than_parser, 2, ("nested",)),
    ("NaN timing", c_nan, 2, ("finite",)),
    ("version \"1\"", c_version_str, 2, ("'1'",)),
    ("version 99", c_version_future, 2, ("99",)),
    ("missing files", c_missing_files, None, ()),
    ("binary garbage manifest", c_garbage, 2, ("bundle.json",)),
    ("manifest a JSON list", c_json_list, 2, ("bundle.json",)),
    ("no manifest", c_no_manifest, 2, ("bundle",)),
    ("foreign schema", c_schema, 2, ("kernelscope bundle",)),
    ("control chars + markup in names", c_control_markup, 0, ()),
    ("binary artifact", c_binary_artifact, 0, ()),
    ("extra sections of the wrong shape", c_sections, 0, ()),
]

# the commands every corrupted bundle goes through
BUNDLE_COMMANDS: list[tuple[str, Callable[[Path], list[str]]]] = [
    ("show", lambda b: ["show", str(b)]),
    ("show --json", lambda b: ["show", str(b), "--json"]),
    ("show --artifact", lambda b: ["show", str(b), "--kernel", "0-0-inference/" + KERNEL, "--artifact", "source"]),
    ("show --artifact output_code", lambda b: ["show", str(b), "--artifact", "output_code"]),
    ("report md", lambda b: ["report", str(b), "--format", "md"]),
    ("report html", lambda b: ["report", str(b), "--format", "html"]),
    ("report json", lambda b: ["report", str(b), "--format", "json"]),
    ("diff", lambda b: ["diff", str(b.parent / "good"), str(b)]),
    ("bench --counts", lambda b: ["bench", str(b), "--counts"]),
    ("show --compile", lambda b: ["show", str(b), "--compile"]),
    ("show --fusion", lambda b: ["show", str(b), "--fusion"]),
]

# which commands each corruption goes through ("ui": the explorer's load path)
PLAN: dict[str, tuple[str, ...]] = {
    "traversal ../": ("show --artifact", "report html", "diff", "ui"),
    "absolute path": ("show --artifact", "report md", "ui"),
    "symlink out": ("show --artifact", "report html", "diff", "ui"),
    "folder symlink out": ("show --artifact output_code", "report html", "ui"),
    "type-mixed name": ("show", "bench --counts", "ui"),
    "kernels a string": ("report json", "diff"),
    "deep nesting": ("show", "report html"),
    "nesting past the parser": ("show", "ui"),
    "NaN timing": ("show --json", "report md", "bench --counts"),
    "version \"1\"": ("show", "ui"),
    "version 99": ("show", "report html"),
    "missing files": ("show", "show --artifact", "report html", "diff", "ui"),
    "binary garbage manifest": ("show", "diff", "ui"),
    "manifest a JSON list": ("report md", "bench --counts"),
    "no manifest": ("show", "report html"),
    "foreign schema": ("show", "ui"),
    "control chars + markup in names": ("show", "show --artifact", "report md", "report html", "diff", "ui"),
    "binary artifact": ("show --artifact", "report html", "diff", "ui"),
    "extra sections of the wrong shape": ("show --compile", "show --fusion", "report md", "report json", "ui"),
}


def corrupted_setup(how: Callable[[Path], None]) -> Callable[[Path], None]:
    def setup(d: Path) -> None:
        bundle(d, "good")
        how(bundle(d, "x"))
    return setup


def no_escape_bytes(d: Path, o: Outcome) -> None:
    for name, text in (("output", o.out), ("error line", o.err)):
        if "\x1b" in text or "\x07" in text:
            o.problems.append(f"wrote raw escape bytes to the terminal ({name})")


def md_escaped(d: Path, o: Outcome) -> None:
    for line in o.out.splitlines():  # the name must sit in a code span fenced by more backticks than it holds
        if "evil.example" in line and not re.search(r"```[^`].*evil\.example.*[^`]```", line):
            o.problems.append("a kernel name injected a Markdown link")


def html_escaped(d: Path, o: Outcome) -> None:
    if "<script>x</script>" in o.out:
        o.problems.append("a kernel name injected HTML")


# -- the UI: `kernelscope BUNDLE` for bundles it must refuse, a headless run for ones it must open ----

UI_PROBE = r"""
import asyncio, sys
from kernelscope.bundle.io import BundleError
from kernelscope.ui.app import make_app
try:
    app = make_app(sys.argv[1])
except BundleError as exc:
    print(f"kernelscope: {exc}", file=sys.stderr); sys.exit(2)
async def go():
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        for key in ("4", "6", "down", "enter", "3", "p", "escape", "2", "5"):
            await pilot.press(key); await pilot.pause()
        return app.is_running, type(app.screen).__name__
running, screen = asyncio.run(go())
print(f"ui ran: {running} on {screen}")
sys.exit(0 if running else 3)
"""


def ui_runner(case: Case, folder: Path, env: dict) -> Outcome:
    b = folder / "x"
    if case.want == 2:  # the real CLI path: refused before the app starts (a hang here is a failure)
        return run_cli([str(b)], folder, env, case.timeout)
    t = time.perf_counter()
    try:
        proc = subprocess.run([PY, "-c", UI_PROBE, str(b)], cwd=str(folder / "cwd"), env=env, capture_output=True,
                              timeout=case.timeout, stdin=subprocess.DEVNULL)
        return Outcome(proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace"),
                       time.perf_counter() - t)
    except subprocess.TimeoutExpired as exc:
        return Outcome(None, (exc.stdout or b"").decode(errors="replace"), (exc.stderr or b"").decode(errors="replace"),
                       time.perf_counter() - t, True)


# -- kills: a capture whose child hangs in the user's file -----------------------------------------

SLOW = "import os, time\nopen(os.environ['KS_PIDFILE'], 'w').write(str(os.getpid()))\ntime.sleep(300)\n\n" + GOOD_FN
# No pid file inside the function: a file written inside a compiled function is never flushed under
# Dynamo. The harness finds the child in /proc and waits for its "first call" progress line.
SLOW_IN_FN = "import time\n\ndef f(x):\n    time.sleep(300)\n    return x + 1\n"


def capture_child_of(folder: Path) -> int | None:
    """The capture child of this case (found in /proc by the case's marker and its command line)."""
    for pid in processes_of(folder):
        try:
            if b"kernelscope.capture.child" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return pid
        except OSError:
            continue
    return None


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def kill_runner(sig: int, who: str = "parent", source: str = SLOW) -> Callable[[Case, Path, dict], Outcome]:
    def run(case: Case, folder: Path, env: dict) -> Outcome:
        write(folder / "slow.py", source)
        pidfile = folder / "child.pid"
        env = dict(env, KS_PIDFILE=str(pidfile))
        out = folder / "outs" / "slow"
        t = time.perf_counter()
        in_fn = "KS_PIDFILE" not in source
        parent = subprocess.Popen([PY, "-m", "kernelscope", "capture", f"{folder / 'slow.py'}::f", "--args", "f32[8]",
                                   "--device", "cpu", "-o", str(out)], cwd=str(folder / "cwd"), env=env,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        err_lines: list[bytes] = []
        out_chunks: list[bytes] = []
        readers = [threading.Thread(target=lambda: err_lines.extend(iter(parent.stderr.readline, b"")), daemon=True),
                   threading.Thread(target=lambda: out_chunks.append(parent.stdout.read()), daemon=True)]
        for r in readers:
            r.start()

        def reached() -> int | None:
            if in_fn:  # the progress line printed as the compiled function is first called
                return capture_child_of(folder) if any(b"first call" in x for x in err_lines) else None
            return int(pidfile.read_text()) if pidfile.is_file() and pidfile.read_text() else None

        def outcome() -> Outcome:
            for r in readers:
                r.join(timeout=10)
            return Outcome(parent.returncode, b"".join(out_chunks).decode(errors="replace"),
                           b"".join(err_lines).decode(errors="replace"), time.perf_counter() - t)

        deadline = time.time() + 150
        while (child := reached()) is None:
            if parent.poll() is not None or time.time() > deadline:
                parent.kill()
                parent.wait()
                o = outcome()
                o.problems.append("the capture child never reached the user's code")
                return o
            time.sleep(0.1)
        time.sleep(1.5 if in_fn else 0.3)  # into the sleep in the user's code
        os.kill(child if who == "child" else parent.pid, sig)
        try:
            parent.wait(timeout=30)
        except subprocess.TimeoutExpired:
            parent.kill()
            parent.wait()
        o = outcome()
        o.err = "\n".join(x for x in o.err.splitlines() if not x.startswith("  "))  # progress lines are not the message
        gone_by = time.time() + 10
        while _alive(child) and time.time() < gone_by:
            time.sleep(0.1)
        if _alive(child):
            o.problems.append(f"capture child {child} outlived its parent's {signal.Signals(sig).name}")
        if o.rc is not None and o.rc < 0:
            o.rc = 2 if -o.rc == sig and who == "parent" else o.rc  # killed by the signal sent: as it should
            if o.rc == 2:
                o.err = o.err or f"(ended by {signal.Signals(sig).name})"
        staged = list(out.parent.glob(".kernelscope-tmp-*")) if out.parent.exists() else []
        work = list((folder / "tmp").glob("kernelscope-work-*"))
        if sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP) and who == "parent" and (staged or work):
            o.problems.append(f"{signal.Signals(sig).name} left a staging or work folder (until the next start)")
        # the next start sweeps what a killed parent could not
        write(folder / "bad.py", "raise RuntimeError('boom at import')\n\n" + GOOD_FN)
        nxt = run_cli(["capture", f"{folder / 'bad.py'}::f", "--args", "f32[8]", "--device", "cpu", "-q", "-o",
                       str(out.parent / "next")], folder, env, 60)
        if nxt.rc != 2 or "boom" not in nxt.err:
            o.problems.append(f"the next start: exit {nxt.rc}: {nxt.err.strip()[-200:]}")
        if out.parent.exists() and list(out.parent.glob(".kernelscope-tmp-*")):
            o.problems.append("a staging folder is left after the next start")
        if list((folder / "tmp").glob("kernelscope-work-*")):
            o.problems.append("a work folder is left after the next start")
        if (folder / "outs" / "slow").exists() and who == "parent":
            o.problems.append("a half-written bundle at -o")
        return o
    return run


# -- serve -----------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One `kernelscope serve` shared by the serve cases that need a running server."""

    lock = threading.Lock()
    proc: subprocess.Popen | None = None
    port = 0
    token = ""
    failure = ""

    @classmethod
    def get(cls, root: Path) -> tuple[int, str]:
        with cls.lock:
            if cls.proc is None and not cls.failure:
                cls.port = free_port()
                (root / "serve").mkdir(exist_ok=True)
                env = dict(os.environ, PYTHONPATH=str(REPO), HOME=str(root / "serve"), TMPDIR=str(root / "serve"),
                           KERNELSCOPE_CACHE=str(root / "serve"))
                cls.proc = subprocess.Popen([PY, "-m", "kernelscope", "serve", "--port", str(cls.port)],
                                            cwd=str(root / "serve"), env=env, stdin=subprocess.DEVNULL,
                                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                            start_new_session=True)
                deadline = time.time() + 60
                line = ""
                while time.time() < deadline and "token=" not in line:
                    line = cls.proc.stderr.readline()
                    if not line and cls.proc.poll() is not None:
                        break
                m = re.search(r"\?token=([\w-]+)", line)
                if m:
                    cls.token = m.group(1)
                else:
                    cls.failure = f"serve printed no token URL: {line.strip()[:200]!r}"
            if cls.failure:
                raise RuntimeError(cls.failure)
            return cls.port, cls.token

    @classmethod
    def stop(cls) -> None:
        if cls.proc is not None and cls.proc.poll() is None:
            os.killpg(cls.proc.pid, signal.SIGTERM)
            try:
                cls.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(cls.proc.pid, signal.SIGKILL)


def http_status(url: str, ws: bool = False, **headers: str) -> int:
    import asyncio

    import aiohttp

    async def go() -> int:
        async with aiohttp.ClientSession() as session:
            if ws:
                try:
                    sock = await session.ws_connect(url, headers=headers, timeout=aiohttp.ClientWSTimeout(ws_close=5))
                except aiohttp.WSServerHandshakeError as exc:
                    return exc.status
                await sock.close()
                return 101
            async with session.get(url, headers=headers, timeout=aiohttp.ClientTimeout(total=15)) as resp:
                await resp.read()
                return resp.status

    return asyncio.run(go())


def serve_probe(path: str, want_status: int, ws: bool = False, **headers: str) -> Callable[[Case, Path, dict], Outcome]:
    def run(case: Case, folder: Path, env: dict) -> Outcome:
        root = folder.parent
        t = time.perf_counter()
        port, token = Server.get(root)
        url = f"{'ws' if ws else 'http'}://127.0.0.1:{port}{path.format(token=token)}"
        hdrs = {k.replace("_", "-"): v.format(port=port) for k, v in headers.items()}
        status = http_status(url, ws=ws, **hdrs)
        o = Outcome(0, f"HTTP {status}", "", time.perf_counter() - t)
        if status != want_status:
            o.problems.append(f"answered {status}, expected {want_status} ({path.split('?')[0]} {hdrs or ''})")
        return o
    return run


def serve_starts(argv: Callable[[Path], list[str]], wait: float = 20) -> Callable[[Case, Path, dict], Outcome]:
    """A serve that must refuse at once: started, and if it prints a URL instead, stopped and failed."""
    def run(case: Case, folder: Path, env: dict) -> Outcome:
        t = time.perf_counter()
        proc = subprocess.Popen([PY, "-m", "kernelscope", *argv(folder)], cwd=str(folder / "cwd"), env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
        try:
            out, err = proc.communicate(timeout=wait)
            return Outcome(proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"),
                           time.perf_counter() - t)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)
            out, err = proc.communicate()
            o = Outcome(2, out.decode(errors="replace"), err.decode(errors="replace"), time.perf_counter() - t)
            o.problems.append("started serving instead of refusing: " + (err.decode(errors="replace").strip()
                                                                          .splitlines() or ["?"])[-1][:160])
            return o
    return run


def busy_port_runner(case: Case, folder: Path, env: dict) -> Outcome:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        case.words = (f"port {port}",)
        return run_cli(["serve", "--port", str(port)], folder, env, case.timeout)


# -- TORCH_TRACE material --------------------------------------------------------------------------

def trace_dir(d: Path, files: dict[str, str | bytes]) -> Path:
    t = d / "trace"
    t.mkdir(exist_ok=True)
    for name, content in files.items():
        write(t / name, content)
    return t


def envelopes(*records) -> str:
    return "".join(TRACE_HEAD + (r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)


GOOD_RECORD = {"dynamo_start": {"stack": []}, "frame_id": 0, "frame_compile_id": 0, "attempt": 0}


def open_case(name: str, files: dict[str, str | bytes] | None, want: int | None, words: tuple[str, ...] = (),
              extra: list[str] | None = None, timeout: float = 60, **kw) -> Case:
    def setup(d: Path) -> None:
        if files is not None:
            trace_dir(d, files)
        else:
            (d / "trace").mkdir()

    return Case("TORCH_TRACE imports", name, lambda d: ["open", str(d / "trace"), "--no-ui", "-o", str(d / "out"),
                                                        *(extra or [])],
                want=want, words=words, setup=setup, timeout=timeout, **kw)


def no_bundle_written(d: Path, o: Outcome) -> None:
    if o.rc == 2 and (d / "out").exists():
        o.problems.append("wrote a bundle for a trace it refused")


# -- the cases -------------------------------------------------------------------------------------

def capture(d: Path, tgt: str, *more: str, out: str | None = None) -> list[str]:
    return ["capture", tgt, *more, "--device", "cpu", "-q", "-o", out if out is not None else str(d / "out")]


def t_file(text: str | bytes, fn: str = "f", name: str = "t.py"):
    return target(name, text, fn)


def target_cases() -> list[Case]:
    cases = []

    def add(name, text, fn, words, more=(), want=2, timeout=90, file_name="t.py", **kw):
        setup, spec = t_file(text, fn, file_name) if text is not None else ((lambda d: None),
                                                                             (lambda d: f"{d / 'nope.py'}::f"))
        cases.append(Case("bad targets", name, lambda d: capture(d, spec(d), *more), want=want, words=words,
                          setup=setup, timeout=timeout, **kw))

    add("missing file", None, "f", ("nope.py", "no such file"), ("--args", "f32[8]"))
    add("missing function", GOOD_FN, "g", ("'g'",), ("--args", "f32[8]"))
    add("syntax error", "def f(x):\n    return x +\n", "f", ("syntax error", "t.py:2"), ("--args", "f32[8]"))
    add("import error", "import no_such_module_kx\n" + GOOD_FN, "f", ("no_such_module_kx",), ("--args", "f32[8]"))
    add("raises at import", "raise ValueError('boom at import')\n" + GOOD_FN, "f", ("boom at import",),
        ("--args", "f32[8]"))
    add("sys.exit at import", "import sys\nsys.exit(3)\n" + GOOD_FN, "f", ("exit",), ("--args", "f32[8]"))
    add("sys.exit(0) at import", "import sys\nsys.exit(0)\n" + GOOD_FN, "f", ("exit",), ("--args", "f32[8]"))
    add("KeyboardInterrupt at import", "raise KeyboardInterrupt\n" + GOOD_FN, "f", ("KeyboardInterrupt",),
        ("--args", "f32[8]"))
    add("a number, not a function", "f = 5\n", "f", ("f",), ("--args", "f32[8]"))
    add("a function bound at runtime", "g = None\nf = g\n", "f", ("f",), ("--args", "f32[8]"))
    add("class needing args", "import torch\nclass M(torch.nn.Module):\n    def __init__(self, w):\n"
        "        super().__init__()\n    def forward(self, x):\n        return x\n", "M", ("M",), ("--args", "f32[8]"))
    add("class not a Module", "class C:\n    def __call__(self, x):\n        return x\n", "C", ("C",),
        ("--args", "f32[8]"))
    add("function raises", "def f(x):\n    raise ValueError('bad value in user code')\n", "f",
        ("bad value in user code",), ("--args", "f32[8]"))
    add("function calls sys.exit", "import sys\n\ndef f(x):\n    sys.exit(0)\n", "f", ("sys.exit",), ("--args", "f32[8]"))
    add("function raises KeyboardInterrupt", "def f(x):\n    raise KeyboardInterrupt\n", "f", ("KeyboardInterrupt",),
        ("--args", "f32[8]"))
    add("too few inputs", "def f(a, b):\n    return a + b\n", "f", ("argument",), ("--args", "f32[8]"))
    add("no inputs, no factory", GOOD_FN, "f", ("no inputs", "--args"))
    add("inputs factory raises", GOOD_FN + "\ndef f_inputs(device):\n    raise RuntimeError('factory broke')\n",
        "f", ("factory broke",))
    add("inputs factory returns one value", GOOD_FN + "\ndef f_inputs(device):\n    return 5\n", "f", (), want=None)
    add("NUL bytes in the file", b"def f(x):\n    return x\x00 + 1\n", "f", ("t.py",), ("--args", "f32[8]"))
    add("not UTF-8", b"# \xff\xfe\xfa\ndef f(x):\n    return x + 1\n", "f", ("t.py",), ("--args", "f32[8]"))
    add("file is a folder", None, "f", ("d.py",), ("--args", "f32[8]"))
    cases[-1].setup = lambda d: (d / "d.py").mkdir()
    cases[-1].argv = lambda d: capture(d, f"{d / 'd.py'}::f", "--args", "f32[8]")
    add("unknown sample", None, "f", ("no sample named",), ("--args", "f32[8]"))
    cases[-1].argv = lambda d: capture(d, "no_such_sample", "--args", "f32[8]")
    add("no ::function", None, "f", ("name the function",))
    cases[-1].setup = lambda d: write(d / "t.py", GOOD_FN)
    cases[-1].argv = lambda d: capture(d, str(d / "t.py"), "--args", "f32[8]")
    add("nothing after ::", None, "f", ("nothing after",))
    cases[-1].argv = lambda d: capture(d, str(d / "t.py") + "::", "--args", "f32[8]")
    add("empty target", None, "f", ("target",))
    cases[-1].argv = lambda d: capture(d, "", "--args", "f32[8]")
    add("bad OPTIONS value", 'OPTIONS = {"mode": "fastest"}\n' + GOOD_FN, "f", ("OPTIONS",), ("--args", "f32[8]"))
    add("OPTIONS not literal", "OPTIONS = dict(backward=True)\n" + GOOD_FN, "f", ("OPTIONS",), ("--args", "f32[8]"))
    add("OPTIONS unknown key", 'OPTIONS = {"turbo": True}\n' + GOOD_FN, "f", ("turbo",), ("--args", "f32[8]"))
    add("--device cuda without a GPU", GOOD_FN, "f", ("cuda",), ("--args", "f32[8]"))
    cases[-1].argv = lambda d: ["capture", f"{d / 't.py'}::f", "--args", "f32[8]", "--device", "cuda", "-q", "-o",
                                str(d / "out")]
    add("KERNELSCOPE_DEVICE=tpu", GOOD_FN, "f", ("tpu",), ("--args", "f32[8]"), env={"KERNELSCOPE_DEVICE": "tpu"})
    cases[-1].argv = lambda d: ["capture", f"{d / 't.py'}::f", "--args", "f32[8]", "-q", "-o", str(d / "out")]
    add("--timeout -1", GOOD_FN, "f", ("--timeout",), ("--args", "f32[8]", "--timeout", "-1"))
    add("--timeout nan", GOOD_FN, "f", ("--timeout",), ("--args", "f32[8]", "--timeout", "nan"))
    add("--timeout abc", GOOD_FN, "f", ("--timeout",), ("--args", "f32[8]", "--timeout", "abc"))
    add("--mode bogus", GOOD_FN, "f", ("--mode",), ("--args", "f32[8]", "--mode", "bogus"))
    add("--backward with --no-grad", GOOD_FN, "f", ("--backward",), ("--args", "f32[8]", "--backward", "--no-grad"))
    add("--preview with --device cpu", GOOD_FN, "f", ("contradict",), ("--args", "f32[8]", "--preview", "sm_90"))
    add("hangs: --timeout 4", "import time\n\ndef f(x):\n    time.sleep(300)\n    return x + 1\n", "f",
        ("4",), ("--args", "f32[8]", "--timeout", "4"))
    add("hangs at import: --timeout 4", "import time\ntime.sleep(300)\n" + GOOD_FN, "f", ("4",),
        ("--args", "f32[8]", "--timeout", "4"))
    add("UI: missing file", None, "f", ("nope.py", "no such file"))
    cases[-1].argv = lambda d: [f"{d / 'nope.py'}::f"]
    cases[-1].area = "UI"
    add("UI: unknown flag", None, "f", ("--frobnicate",))
    cases[-1].argv = lambda d: ["--frobnicate"]
    cases[-1].area = "UI"
    add("UI: missing folder", None, "f", ("nowhere",))
    cases[-1].argv = lambda d: [str(d / "nowhere") + "/"]
    cases[-1].area = "UI"
    add("UI: a plain file", None, "f", ("notes.txt",))
    cases[-1].setup = lambda d: write(d / "notes.txt", "hello\n")
    cases[-1].argv = lambda d: [str(d / "notes.txt")]
    cases[-1].area = "UI"
    add("UI: empty folder", None, "f", ("bundle",))
    cases[-1].setup = lambda d: (d / "empty").mkdir()
    cases[-1].argv = lambda d: [str(d / "empty")]
    cases[-1].area = "UI"
    add("show: missing folder", None, "f", ("nowhere",))
    cases[-1].argv = lambda d: ["show", str(d / "nowhere")]
    cases[-1].area = "corrupted bundles"
    add("show: unknown kernel", None, "f", ("nosuchkernel",))
    cases[-1].setup = lambda d: bundle(d)
    cases[-1].argv = lambda d: ["show", str(d / "b"), "--kernel", "nosuchkernel", "--artifact", "source"]
    cases[-1].area = "corrupted bundles"
    add("show: unknown artifact", None, "f", ("bogus",))
    cases[-1].setup = lambda d: bundle(d)
    cases[-1].argv = lambda d: ["show", str(d / "b"), "--kernel", KERNEL, "--artifact", "bogus"]
    cases[-1].area = "corrupted bundles"
    add("show: --arch sm_1", None, "f", ("sm_1",))
    cases[-1].setup = lambda d: bundle(d)
    cases[-1].argv = lambda d: ["show", str(d / "b"), "--kernel", KERNEL, "--artifact", "sass", "--arch", "sm_1"]
    cases[-1].area = "corrupted bundles"
    add("diff: a bundle with itself missing", None, "f", ("nowhere",))
    cases[-1].setup = lambda d: bundle(d)
    cases[-1].argv = lambda d: ["diff", str(d / "b"), str(d / "nowhere")]
    cases[-1].area = "corrupted bundles"
    add("bench: --counts on a missing folder", None, "f", ("nowhere",))
    cases[-1].argv = lambda d: ["bench", str(d / "nowhere"), "--counts"]
    cases[-1].area = "corrupted bundles"
    for c in cases:
        if c.area != "bad targets":
            c.timeout = 30
    return cases


BAD_ARGS = [
    ("unclosed bracket", "f32[8", ("f32[8",)),
    ("extra bracket", "f32[8]]", ("f32[8]]",)),
    ("negative size", "f32[-1]", ("-1",)),
    ("fractional size", "f32[1.5]", ("1.5",)),
    ("unknown dtype", "f33[8]", ("f33",)),
    ("complex dtype", "c64[8]", ("c64",)),
    ("empty", "", ("empty",)),
    ("blank", "   ", ("--args",)),
    ("lone comma", ",", ("--args",)),
    ("double comma", "f32[8],,f32[8]", ("empty",)),
    ("empty call between ;", "f32[8];;f32[8]", ("empty call",)),
    ("reversed range", "i64[8] 5..1", ("5..1",)),
    ("range not numbers", "i64[8] 0..abc", ("0..abc",)),
    ("range on floats", "f32[8] 0..5", ("integer",)),
    ("range does not fit", "i8[4] 0..1000", ("i8",)),
    ("grad on integers", "i64[8] grad", ("grad",)),
    ("unknown suffix", "f32[8] fast", ("fast",)),
    ("grad twice", "f32[8] grad grad", ("grad",)),
    ("bare word", "hello", ("hello",)),
    ("python expression", "torch.randn(8)", ("torch.randn",)),
    ("nan scalar", "nan", ("nan",)),
    ("rank 100, 2**100 elements", "f32[" + ", ".join(["2"] * 100) + "]", ("inputs",)),
    ("100 KB spec", "f32[8] " + "x" * 100_000, ("--args",)),
    ("huge size (400 GB)", "f32[99999999999]", ("400.0 GB",)),
    ("16 TB of inputs", "f32[4000000, 1000000]", ("TB",)),
    ("size past int64", "f32[99999999999999999999999]", ("f32[99999999999999999999999]",)),
    ("unicode digits", "f32[８]", ("f32[８]",)),
    ("many calls, one bad", "f32[8]; f32[8]; f32[x]", ("f32[x]",)),
]


def args_cases() -> list[Case]:
    cases = []
    for name, spec, words in BAD_ARGS:
        cases.append(Case("bad --args", name, (lambda text: lambda d: capture(d, f"{d / 't.py'}::f", "--args", text))(spec),
                          want=2, words=words, setup=lambda d: write(d / "t.py", GOOD_FN), timeout=90,
                          check=lambda d, o: (d / "out").exists() and o.problems.append("left a bundle")))
    return cases


def _ro(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o500)
    return path


def _user_folder(d: Path) -> None:
    mine = d / "mine"
    write(mine / "bundle.json", '{"mine": true}')
    write(mine / "notes.txt", "keep me")
    write(mine / "data" / "x.csv", "1,2,3")


def _unchanged(rel: str, text: str) -> Callable[[Path, Outcome], None]:
    def check(d: Path, o: Outcome) -> None:
        p = d / rel
        if not p.is_file() or p.read_text() != text:
            o.problems.append(f"{rel} was changed or removed")
    return check


def _bundle_intact(rel: str) -> Callable[[Path, Outcome], None]:
    def check(d: Path, o: Outcome) -> None:
        if (d / rel / "bundle.json").read_bytes() != (FIXTURE / "bundle.json").read_bytes():
            o.problems.append(f"{rel}/bundle.json was changed")
    return check


def output_cases(compiles: bool) -> list[Case]:
    C = []
    fail_import = "raise RuntimeError('boom at import')\n" + GOOD_FN

    def cap(name, out, words, setup=None, want=2, keep=(), check=None, force=True, tgt_text=GOOD_FN, **kw):
        def s(d: Path) -> None:
            write(d / "t.py", tgt_text)
            if setup:
                setup(d)
        C.append(Case("output paths", name, lambda d: capture(d, f"{d / 't.py'}::f", "--args", "f32[8]",
                                                              *(["--force"] if force else []), out=out(d)),
                      want=want, words=words, setup=s, keep=keep, check=check,
                      # want=None: the capture may succeed, i.e. compile for real (60-110 s on a loaded 2-core box)
                      timeout=kw.pop("timeout", 90 if want == 2 else 300), compiles=kw.pop("compiles", want != 2), **kw))

    cap("-o . --force", lambda d: ".", ("current folder",), setup=lambda d: write(d / "cwd" / "bundle.json",
        json.dumps({"schema": "kernelscope.bundle", "version": 1})), keep=("cwd/bundle.json",))
    cap("-o .. --force", lambda d: "..", ("parent",))
    cap("-o '~' (a folder named ~, no shell)", lambda d: "~", (), want=None, setup=lambda d: write(d / "home" / "notes.txt", "keep"),
        keep=("home/notes.txt",))
    cap("-o $HOME --force", lambda d: str(d / "home"), ("home",))
    cap("-o / --force", lambda d: "/", ("/",))
    cap("-o a file", lambda d: str(d / "afile"), ("afile",), setup=lambda d: write(d / "afile", "mine"),
        check=_unchanged("afile", "mine"), force=False)
    cap("-o a file --force", lambda d: str(d / "afile"), ("afile",), setup=lambda d: write(d / "afile", "mine"),
        check=_unchanged("afile", "mine"))
    cap("-o below a file", lambda d: str(d / "afile" / "below"), ("afile",), setup=lambda d: write(d / "afile", "x"),
        force=False)
    cap("-o read-only folder", lambda d: str(d / "ro" / "out"), ("ro",), setup=lambda d: _ro(d / "ro"), force=False,
        needs_non_root=True)
    cap("-o read-only folder (it exists)", lambda d: str(d / "ro"), ("ro",), setup=lambda d: _ro(d / "ro"),
        force=False, needs_non_root=True)
    cap("-o name too long", lambda d: str(d / ("x" * 300)), ("x" * 20,), force=False)
    cap("-o empty string (the default folder)", lambda d: "", (), force=False, want=None)
    cap("--force on a non-bundle with files", lambda d: str(d / "mine"), ("not a kernelscope bundle",),
        setup=_user_folder, keep=("mine/notes.txt", "mine/data/x.csv"), check=_unchanged("mine/bundle.json", '{"mine": true}'))
    cap("no --force on a non-bundle with files", lambda d: str(d / "mine"), ("mine",), setup=_user_folder,
        keep=("mine/notes.txt", "mine/data/x.csv"), force=False)
    cap("no --force on a bundle", lambda d: str(d / "b"), ("--force",), setup=lambda d: bundle(d), force=False,
        check=_bundle_intact("b"))
    cap("--force on a bundle, capture fails", lambda d: str(d / "b"), ("boom at import",),
        setup=lambda d: (bundle(d), write(d / "b" / "notes.txt", "keep")), tgt_text=fail_import,
        keep=("b/notes.txt",), check=_bundle_intact("b"))
    cap("-o an existing empty folder, no --force", lambda d: str(d / "empty"), ("already exists",),
        setup=lambda d: (d / "empty").mkdir(), tgt_text=fail_import, force=False,
        check=lambda d, o: (d / "empty").is_dir() or o.problems.append("the empty folder was removed"))

    def opn(name, out, words, setup=None, want=2, keep=(), check=None, force=True, **kw):
        def s(d: Path) -> None:
            shutil.copytree(TRACE_FIXTURE, d / "trace")
            if setup:
                setup(d)
        C.append(Case("output paths", name, lambda d: ["open", str(d / "trace"), "--no-ui", "-o", out(d),
                                                       *(["--force"] if force else [])],
                      want=want, words=words, setup=s, keep=keep, check=check,
                      # want=None: the capture may succeed, i.e. compile for real (60-110 s on a loaded 2-core box)
                      timeout=kw.pop("timeout", 90 if want == 2 else 300), compiles=kw.pop("compiles", want != 2), **kw))

    opn("open -o . --force", lambda d: ".", ("current folder",))
    opn("open -o $HOME --force", lambda d: str(d / "home"), ("home",))
    opn("open -o a file", lambda d: str(d / "afile"), ("afile",), setup=lambda d: write(d / "afile", "mine"),
        check=_unchanged("afile", "mine"))
    opn("open -o read-only folder", lambda d: str(d / "ro" / "out"), ("ro",), setup=lambda d: _ro(d / "ro"),
        needs_non_root=True)
    opn("open --force on a non-bundle with files", lambda d: str(d / "mine"), ("not a kernelscope bundle",),
        setup=_user_folder, keep=("mine/notes.txt", "mine/data/x.csv"))

    def replaced(d: Path, o: Outcome) -> None:
        m = manifest(d / "b")
        if m.get("target", {}).get("name") == manifest(FIXTURE).get("target", {}).get("name") and \
                (d / "b" / "bundle.json").read_bytes() == (FIXTURE / "bundle.json").read_bytes():
            o.problems.append("the bundle was not replaced")
        if (d / "b" / "notes.txt").read_text() != "keep me":
            o.problems.append("notes.txt changed")
    opn("open --force on a real bundle with an extra file", lambda d: str(d / "b"), (), want=0,
        setup=lambda d: (bundle(d), write(d / "b" / "notes.txt", "keep me"), write(d / "b" / "plots" / "a.png", "p")),
        keep=("b/notes.txt", "b/plots/a.png"), check=replaced)

    def rep(name, out, words, setup=None, want=2, keep=(), check=None, **kw):
        def s(d: Path) -> None:
            bundle(d)
            if setup:
                setup(d)
        C.append(Case("output paths", name, lambda d: ["report", str(d / "b"), "--format", "md", "-o", out(d)],
                      want=want, words=words, setup=s, keep=keep, check=check, timeout=30, **kw))

    rep("report -o a folder", lambda d: str(d / "cwd"), ("cwd",))
    rep("report -o a missing folder's file", lambda d: str(d / "nowhere" / "r.md"), ("nowhere",))
    rep("report -o read-only", lambda d: str(d / "ro" / "r.md"), ("ro",), setup=lambda d: _ro(d / "ro"),
        needs_non_root=True)
    rep("report -o the bundle's own manifest", lambda d: str(d / "b" / "bundle.json"), ("bundle.json",),
        check=_bundle_intact("b"))

    if compiles:
        big_print = "import torch\n\ndef f(x):\n    print('x' * (50 << 20))\n    return x + 1\n"

        def check_real(d: Path, o: Outcome) -> None:
            if (d / "b" / "notes.txt").read_text() != "keep me":
                o.problems.append("notes.txt was changed")
            if (d / "b" / "bundle.json").read_bytes() == (FIXTURE / "bundle.json").read_bytes():
                o.problems.append("the bundle was not replaced")
            kept = (d / "b" / "logs" / "stdout.txt")
            if kept.is_file() and kept.stat().st_size > 20 << 20:
                o.problems.append(f"kept {kept.stat().st_size >> 20} MB of the function's output")
            if not (d / "b" / "kernels").is_dir():
                o.problems.append("no kernels/ in the new bundle")
        cap("compiled: --force on a real bundle with an extra file (function prints 50 MB)", lambda d: str(d / "b"),
            ("captured",), want=0, tgt_text=big_print,
            setup=lambda d: (bundle(d), write(d / "b" / "notes.txt", "keep me")), keep=("b/notes.txt",),
            check=check_real, compiles=True)
        C[-1].timeout = 300
    return C


def kill_cases() -> list[Case]:
    C = []
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL):
        C.append(Case("kills", f"{sig.name} to the parent while the child imports the target",
                      runner=kill_runner(sig), want=None, timeout=150))
    for sig in (signal.SIGTERM, signal.SIGHUP):
        C.append(Case("kills", f"{sig.name} to the parent while the function runs",
                      runner=kill_runner(sig, source=SLOW_IN_FN), want=None, timeout=200))
    C.append(Case("kills", "SIGINT to the parent while the function runs", runner=kill_runner(signal.SIGINT,
                                                                                              source=SLOW_IN_FN),
                  want=None, timeout=150))
    C.append(Case("kills", "SIGKILL to the parent while the function runs", runner=kill_runner(signal.SIGKILL,
                                                                                               source=SLOW_IN_FN),
                  want=None, timeout=150))
    C.append(Case("kills", "SIGKILL to the child", runner=kill_runner(signal.SIGKILL, who="child"), want=2,
                  words=("killed",), timeout=150))
    C.append(Case("kills", "SIGTERM to the child", runner=kill_runner(signal.SIGTERM, who="child"), want=2,
                  words=("SIGTERM",), timeout=150))
    return C


def bundle_cases() -> list[Case]:
    C = []
    for cname, how, want, words in CORRUPTIONS:
        for mname, argv in BUNDLE_COMMANDS:
            if mname not in PLAN[cname]:
                continue
            w, ws = want, words
            if cname == "missing files" and mname == "show --artifact":
                w, ws = 2, ("cannot read",)
            checks = [no_escape_bytes]
            if cname.startswith("control") and mname == "report md":
                checks.append(md_escaped)
            if cname.startswith("control") and mname == "report html":
                checks.append(html_escaped)
            C.append(Case("corrupted bundles", f"{cname}: {mname}", (lambda a: lambda d: a(d / "x"))(argv), want=w,
                          words=ws, setup=corrupted_setup(how), timeout=60,
                          check=(lambda cs: lambda d, o: [c(d, o) for c in cs])(checks)))
        if "ui" not in PLAN[cname]:
            continue
        C.append(Case("UI", f"{cname}: load", runner=ui_runner, want=want if want == 2 else 0, words=words,
                      setup=corrupted_setup(how), timeout=90))
    return C


def trace_cases() -> list[Case]:
    return [
        open_case("random text", {"x.log": "just some text\nnothing here\n" * 100}, 2, ("no TORCH_TRACE",),
                  check=no_bundle_written),
        open_case("binary", {"x.log": bytes(range(256)) * 200}, 2, ("no TORCH_TRACE",), check=no_bundle_written),
        open_case("NUL bytes", {"x.log": b"\0" * 100_000}, 2, ("no TORCH_TRACE",), check=no_bundle_written),
        open_case("gzip data", {"x.log.gz": b"\x1f\x8b\x08\x00" + os.urandom(4000)}, 2, ("TORCH_TRACE",),
                  check=no_bundle_written),
        open_case("not JSON after the header", {"x.log": envelopes("{not json", "[1, 2")}, 2, ("no TORCH_TRACE",),
                  check=no_bundle_written),
        open_case("only malformed envelopes", {"x.log": envelopes({"frame_id": [1], "dynamo_start": {}},
                                                                   {"artifact": "x", "frame_id": "a"})},
                  2, ("no TORCH_TRACE",), check=no_bundle_written),
        open_case("some malformed, one good", {"x.log": envelopes(GOOD_RECORD, "{broken", {"artifact": 5},
                                                                   {"str": ["a", 1]})}, 0, ()),
        open_case("deep nesting in a record", {"x.log": envelopes('{"dynamo_start": ' + "[" * 50_000 + "]" * 50_000 +
                                                                   ', "frame_id": 0}', GOOD_RECORD)}, None, ()),
        open_case("NaN and huge numbers", {"x.log": envelopes('{"dynamo_start": {"stack": []}, "frame_id": NaN}',
                                                               '{"dynamo_start": {}, "frame_id": 1e999}',
                                                               GOOD_RECORD)}, None, ()),
        open_case("empty folder", None, 2, ("trace",), check=no_bundle_written),
        open_case("empty log", {"x.log": ""}, 2, ("TORCH_TRACE",), check=no_bundle_written),
        open_case("huge line (60 MB)", {"x.log": TRACE_HEAD + '{"str": ["' + "a" * (60 << 20) + '"]}\n' +
                                        envelopes(GOOD_RECORD)}, None, (), timeout=90),
        open_case("huge line without newline", {"x.log": "V" * (60 << 20)}, 2, ("TORCH_TRACE",), timeout=90,
                  check=no_bundle_written),
        open_case("a log that is a folder", {"sub.log/x": "hi"}, 2, ("TORCH_TRACE",), check=no_bundle_written),
        open_case("--rank 99", None, 2, ("99",), extra=["--rank", "99"]),
        open_case("--rank -1", None, 2, ("-1",), extra=["--rank", "-1"]),
        open_case("--triton-cache missing", None, 2, ("nowhere",), extra=["--triton-cache", "/nowhere/kx"]),
        open_case("--stderr-log missing", None, 2, ("nowhere",), extra=["--stderr-log", "/nowhere/kx.txt"]),
        open_case("--stderr-log binary", None, None, (), extra=["--stderr-log", "BIN"]),
        Case("TORCH_TRACE imports", "missing path", lambda d: ["open", str(d / "nowhere"), "--no-ui"], words=("nowhere",)),
        Case("TORCH_TRACE imports", "unreadable log", lambda d: ["open", str(d / "trace"), "--no-ui", "-o", str(d / "out")],
             words=("x.log",), setup=lambda d: (trace_dir(d, {"x.log": envelopes(GOOD_RECORD)}),
                                                (d / "trace" / "x.log").chmod(0)), needs_non_root=True),
        Case("TORCH_TRACE imports", "a real trace (control)", lambda d: ["open", str(d / "trace"), "--no-ui", "-o",
                                                                         str(d / "out")],
             want=0, setup=lambda d: shutil.copytree(TRACE_FIXTURE, d / "trace"), timeout=90),
    ]


def _fix_trace_cases(cases: list[Case]) -> None:
    """Cases above that need a real trace or a binary stderr log."""
    for c in cases:
        if c.name in ("--rank 99", "--rank -1", "--triton-cache missing", "--stderr-log missing", "--stderr-log binary"):
            c.setup = lambda d: (shutil.copytree(TRACE_FIXTURE, d / "trace"), write(d / "BIN", bytes(range(256)) * 4000))
            base = c.argv
            c.argv = (lambda argv: lambda d: [str(d / "BIN") if a == "BIN" else a for a in argv(d)])(base)


def serve_cases() -> list[Case]:
    S = "serve"
    return [
        Case(S, "page without the token", runner=serve_probe("/", 403), want=0),
        Case(S, "page with a wrong token", runner=serve_probe("/?token=wrong{token}", 403), want=0),
        Case(S, "page with an empty token", runner=serve_probe("/?token=", 403), want=0),
        Case(S, "page with the token (control)", runner=serve_probe("/?token={token}", 200), want=0),
        Case(S, "page for a rebound Host", runner=serve_probe("/?token={token}", 403, Host="evil.example:{port}"),
             want=0),
        Case(S, "socket without the token", runner=serve_probe("/ws", 403, ws=True), want=0),
        Case(S, "socket with a wrong token", runner=serve_probe("/ws?token=nope", 403, ws=True), want=0),
        Case(S, "socket from a foreign Origin", runner=serve_probe("/ws?token={token}", 403, ws=True,
                                                                   Origin="http://evil.example"), want=0),
        Case(S, "socket from another local port", runner=serve_probe("/ws?token={token}", 403, ws=True,
                                                                     Origin="http://localhost:1"), want=0),
        Case(S, "socket with Origin null", runner=serve_probe("/ws?token={token}", 403, ws=True, Origin="null"), want=0),
        Case(S, "busy port", runner=busy_port_runner, words=("port",), timeout=60),
        Case(S, "port 0", lambda d: ["serve", "--port", "0"], words=("out of range",), timeout=60),
        Case(S, "port 70000", lambda d: ["serve", "--port", "70000"], words=("out of range",), timeout=60),
        Case(S, "port -5", lambda d: ["serve", "--port", "-5"], words=("out of range",), timeout=60),
        Case(S, "port abc", lambda d: ["serve", "--port", "abc"], words=("--port",), timeout=60),
        Case(S, "--host 0.0.0.0", lambda d: ["serve", "--host", "0.0.0.0"], words=("loopback",), timeout=60),
        Case(S, "--host evil.example", lambda d: ["serve", "--host", "evil.example"], words=("loopback",), timeout=60),
        Case(S, "a corrupted bundle", runner=serve_starts(lambda d: ["serve", str(d / "x"), "--port", str(free_port())]),
             words=("refusing",), setup=corrupted_setup(c_traversal), timeout=60),
        Case(S, "a missing bundle folder", runner=serve_starts(lambda d: ["serve", str(d / "nowhere") + "/",
                                                                          "--port", str(free_port())]),
             words=("nowhere",), timeout=60),
        Case(S, "a missing target file", runner=serve_starts(lambda d: ["serve", f"{d / 'nope.py'}::f",
                                                                        "--port", str(free_port())]),
             words=("nope.py",), timeout=60),
        Case(S, "--talk with a missing script", lambda d: ["serve", "--talk", str(d / "nope.toml"), "--port",
                                                           str(free_port())], words=("nope.toml",), timeout=60),
        Case(S, "--talk with a broken script", lambda d: ["serve", "--talk", str(d / "t.toml"), "--port",
                                                          str(free_port())], words=("t.toml",), timeout=60,
             setup=lambda d: write(d / "t.toml", "[[step]\nbundle = \n")),
    ]


def size_cases() -> list[Case]:
    def token_setup(d: Path) -> None:
        bundle(d, "a")
        b = bundle(d, "x")
        rel = kernel_rel(b)
        (b / rel).write_text((b / rel).read_text() + "# " + "x/" * 500_000 + "\n")

    def huge_source(d: Path) -> None:
        bundle(d, "good")
        b = bundle(d, "x")
        (b / kernel_rel(b)).write_text("x = '" + "a" * (50 << 20) + "'\n")

    def cut_and_small(limit: int) -> Callable[[Path, Outcome], None]:
        def check(d: Path, o: Outcome) -> None:
            if len(o.out) > limit:
                o.problems.append(f"printed {len(o.out) >> 10} KB")
        return check

    def fast(limit: float, size_limit: int) -> Callable[[Path, Outcome], None]:
        def check(d: Path, o: Outcome) -> None:
            if o.seconds > limit:
                o.problems.append(f"took {o.seconds:.1f} s (more than {limit:.0f} s)")
            cut_and_small(size_limit)(d, o)
        return check

    Z = "size"
    return [
        Case(Z, "1 MB token: diff", lambda d: ["diff", str(d / "a"), str(d / "x")], want=0, setup=token_setup,
             check=fast(10, 200_000), timeout=60),
        Case(Z, "1 MB token: diff --stages", lambda d: ["diff", str(d / "a"), str(d / "x"), "--stages"], want=0,
             setup=token_setup, check=fast(15, 400_000), timeout=60),
        Case(Z, "1 MB token: diff --format md", lambda d: ["diff", str(d / "a"), str(d / "x"), "--format", "md"],
             want=0, setup=token_setup, check=fast(10, 400_000), timeout=60),
        Case(Z, "50 MB one-line source: report html", lambda d: ["report", str(d / "x"), "--format", "html"], want=0,
             setup=huge_source, check=fast(30, 2_000_000), timeout=120),
        Case(Z, "50 MB one-line source: report md", lambda d: ["report", str(d / "x"), "--format", "md"], want=0,
             setup=huge_source, check=fast(30, 2_000_000), timeout=120),
        Case(Z, "50 MB one-line source: diff", lambda d: ["diff", str(d / "good"), str(d / "x")], want=0,
             setup=huge_source, check=fast(30, 2_000_000), timeout=120),
        Case(Z, "50 MB one-line source: show --artifact", lambda d: ["show", str(d / "x"), "--kernel", KERNEL,
                                                                     "--artifact", "source"],
             want=0, setup=huge_source, check=fast(30, 60 << 20), timeout=120),
        Case(Z, "50 MB one-line source: UI load", runner=ui_runner, want=0, setup=huge_source,
             check=fast(60, 10_000), timeout=150),
        Case(Z, "50 MB manifest", lambda d: ["show", str(d / "x")], want=None, timeout=90,
             setup=lambda d: (bundle(d, "x"), edit(d / "x", lambda m: m["extra"].__setitem__("pad", "p" * (50 << 20)))),
             check=fast(30, 200_000)),
    ]


# == round two (issue 22): escapes, loaders, serve's log, kills mid-replace, full disks, processes,
# received bundles, the environment ==================================================================

ESC_TITLE = "\x1b]0;PWN\x07"
ESC_CLIP = "\x1b]52;c;cHdubmVk\x07"
ESC_ALL = ESC_TITLE + ESC_CLIP + "\x1b[2J\x1b]8;;http://evil.example\x1b\\link\x1b]8;;\x1b\\\x9b31m\x9d0;c1\x07"


def no_escapes(d: Path, o: Outcome) -> None:
    """No ESC, BEL or C1 control reached the terminal (stdout or stderr)."""
    for name, text in (("output", o.out), ("error line", o.err)):
        if re.search("[\x1b\x07\x9b\x9d\x90\x9e\x9f]", text):
            o.problems.append(f"wrote raw escape bytes to the terminal ({name})")


TALK_PROBE = r"""
import sys
from kernelscope.ui.talk import TalkError, load_talk
try:
    t = load_talk(sys.argv[1])
except TalkError as exc:
    print(f"kernelscope: {exc}", file=sys.stderr); sys.exit(2)
print("talk:", t.title, "|", " | ".join(f"{s.title} / {s.note}" for s in t.steps))
"""


def talk_probe(case: Case, folder: Path, env: dict) -> Outcome:
    """What the talk loader hands the presentation (titles and notes), printed as the UI would show them."""
    t = time.perf_counter()
    try:
        proc = subprocess.run([PY, "-c", TALK_PROBE, str(folder / "talk.json")], cwd=str(folder / "cwd"), env=env,
                              capture_output=True, timeout=case.timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return Outcome(None, "", "", time.perf_counter() - t, True)
    return Outcome(proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace"),
                   time.perf_counter() - t)


def _talk(d: Path, script: dict | str) -> None:
    bundle(d, "b")
    write(d / "talk.json", script if isinstance(script, str) else json.dumps(script))


def _escape_symlink(b: Path) -> None:
    outside = b.parent / f"out{ESC_TITLE}side{ESC_CLIP}"
    outside.mkdir()
    write(outside / "k.py", SECRET + "\n")
    rel = kernel_rel(b)
    (b / rel).unlink()
    (b / rel).symlink_to(outside / "k.py")


# The user's code writes forged progress events to the capture's event pipe (its fd is in the request
# the child was started with) and then fails at import.
FORGED_EVENTS = ("import json, os, sys\n"
                 "req = json.load(open(sys.argv[-1]))\n"
                 "fd = req['event_fd']\n"
                 "for ev in ({'phase': 'compile', 'message': " + repr(ESC_TITLE + "forged progress") + "},\n"
                 "           {'phase': 'error', 'message': " + repr(ESC_ALL + "forged error") + ", 'kind': 'user'}):\n"
                 "    os.write(fd, (json.dumps(ev) + '\\n').encode())\n"
                 "raise RuntimeError('stop here')\n\n" + GOOD_FN)


def escape_cases() -> list[Case]:
    E = "escapes"
    cases = [
        Case(E, "talk title and note", runner=talk_probe, want=0, check=no_escapes,
             setup=lambda d: _talk(d, {"title": ESC_ALL + "T", "step": [{"bundle": "b", "title": ESC_TITLE + "s",
                                                                        "note": ESC_CLIP + "n\x9b2J"}]})),
        Case(E, "talk pane name", runner=talk_probe, words=("unknown pane",), check=no_escapes,
             setup=lambda d: _talk(d, {"step": [{"bundle": "b", "pane": ESC_TITLE + "x"}]})),
        Case(E, "talk bundle name", runner=talk_probe, words=("not a bundle folder",), check=no_escapes,
             setup=lambda d: _talk(d, {"step": [{"bundle": "no" + ESC_CLIP}]})),
        Case(E, "an exception at import", lambda d: capture(d, f"{d / 't.py'}::f", "--args", "f32[8]"), words=("importing", "PWN"),
             setup=lambda d: write(d / "t.py", f"raise RuntimeError({ESC_ALL + 'PWN'!r})\n\n" + GOOD_FN),
             check=no_escapes, timeout=150),
        Case(E, "forged event lines on the capture's pipe", lambda d: capture(d, f"{d / 't.py'}::f", "--args", "f32[8]"),
             setup=lambda d: write(d / "t.py", FORGED_EVENTS), check=no_escapes, timeout=150),
    ]
    for mname in ("show --artifact", "report md", "report html"):
        argv = dict(BUNDLE_COMMANDS)[mname]
        cases.append(Case(E, f"a symlink target with escapes: {mname}", (lambda a: lambda d: a(d / "x"))(argv),
                          words=("symlink",), setup=corrupted_setup(_escape_symlink), check=no_escapes))
    return cases


# -- loaders: types, depth, regular files, sizes -----------------------------------------------------

def _fifo_source(b: Path) -> None:
    rel = kernel_rel(b)
    (b / rel).unlink()
    os.mkfifo(b / rel)


def _bench_fixture(d: Path, name: str = "x") -> Path:
    out = d / name
    shutil.copytree(REPO / "tests" / "fixtures" / "gpu" / "softmax_bench_cpu", out, symlinks=True)
    return out


def _bench_edit(change: Callable[[dict], None]) -> Callable[[Path], None]:
    def setup(d: Path) -> None:
        _bench_fixture(d, "good")
        b = _bench_fixture(d)
        m = manifest(b)
        change(m["extra"]["bench"])
        (b / "bundle.json").write_text(json.dumps(m))
    return setup


def _set(path: str, value) -> Callable[[dict], None]:
    def change(rec: dict) -> None:
        node = rec
        keys = path.split(".")
        for k in keys[:-1]:
            node = node[int(k)] if isinstance(node, list) else node[k]
        node[keys[-1]] = value
    return change


BENCH_VARIANTS = [  # a bench record with fields of the wrong type (strings for objects, lists for numbers ...)
    ("run a string", _set("run", "x")), ("run.device a string", _set("run.device", "b")),
    ("run.eager a list", _set("run.eager", [1])), ("e2e a string", _set("run.eager.e2e", "s")),
    ("median_us a list", _set("run.eager.e2e.median_us", [1])), ("kernels a string", _set("run.eager.kernels", "k")),
    ("a kernel row a number", _set("run.compiled.kernels", [5])), ("per_kernel an object", _set("run.per_kernel", {"a": 1})),
    ("per_kernel us a string", _set("run.per_kernel.0.us", "fast")), ("counts a list", _set("run.counts", [1])),
    ("launches_per_call a list", _set("run.compiled.launches_per_call", [])),
]


def _manifest_edit(change: Callable[[dict], None]) -> Callable[[Path], None]:
    def setup(d: Path) -> None:
        b = _bench_fixture(d)
        m = manifest(b)
        change(m)
        (b / "bundle.json").write_text(json.dumps(m))
    return setup


# The peak of this process's own memory: VmHWM belongs to its address space, made anew at exec; ru_maxrss
# starts at the forking parent's peak on Linux (a harness grown by other cases reported its own size here).
RSS_PROBE = ("import re, sys\nfrom kernelscope.cli import main\nrc = main(sys.argv[1:])\n"
             "hwm = re.search(r'VmHWM:\\s+(\\d+) kB', open('/proc/self/status').read()).group(1)\n"
             "print(f'peak-rss-kb {hwm}', file=sys.stderr)\n"
             "sys.exit(rc)\n")


def rss_runner(limit_mb: int) -> Callable[[Case, Path, dict], Outcome]:
    """The CLI run in one process that reports its own peak memory; over ``limit_mb`` fails."""
    def run(case: Case, folder: Path, env: dict) -> Outcome:
        t = time.perf_counter()
        proc = subprocess.run([PY, "-c", RSS_PROBE, *case.argv(folder)], cwd=str(folder / "cwd"), env=env,
                              capture_output=True, timeout=case.timeout, stdin=subprocess.DEVNULL)
        err = proc.stderr.decode(errors="replace")
        m = re.search(r"peak-rss-kb (\d+)\n?", err)
        o = Outcome(proc.returncode, proc.stdout.decode(errors="replace"), err.replace(m.group(0), "") if m else err,
                    time.perf_counter() - t)
        if m and int(m.group(1)) > limit_mb << 10:
            o.problems.append(f"peaked at {int(m.group(1)) >> 10} MB of memory (more than {limit_mb} MB)")
        return o
    return run


def _huge_line_trace(d: Path) -> None:
    shutil.copytree(TRACE_FIXTURE, d / "trace")
    with open(d / "trace" / "zz_huge.log", "w") as fh:  # one 300 MB line, then nothing
        fh.write(TRACE_HEAD + '{"str": ["')
        chunk = "a" * (1 << 20)
        for _ in range(300):
            fh.write(chunk)
        fh.write('", 0]}\n')


def loader_cases() -> list[Case]:
    L = "loaders"
    cases = []
    for mname in ("show --artifact", "report html"):
        argv = dict(BUNDLE_COMMANDS)[mname]
        cases.append(Case(L, f"a FIFO in the bundle: {mname}", (lambda a: lambda d: a(d / "x"))(argv),
                          words=("regular file",), setup=corrupted_setup(_fifo_source), timeout=30))
    cases.append(Case(L, "a FIFO in the bundle: UI load", runner=ui_runner, want=None,
                      setup=corrupted_setup(_fifo_source), timeout=60))
    cases.append(Case(L, "a FIFO as bundle.json: show", lambda d: ["show", str(d / "x")], words=("regular file",),
                      setup=lambda d: (bundle(d, "x"), (d / "x" / "bundle.json").unlink(),
                                       os.mkfifo(d / "x" / "bundle.json")), timeout=30))
    cases.append(Case(L, "a FIFO as a trace log", lambda d: ["open", str(d / "trace"), "--no-ui", "-o", str(d / "o")],
                      want=None, setup=lambda d: (shutil.copytree(TRACE_FIXTURE, d / "trace"),
                                                  os.mkfifo(d / "trace" / "zz.log")), timeout=60))
    for name, change in BENCH_VARIANTS:
        for mname, argv in (("report md", lambda d: ["report", str(d / "x"), "--format", "md"]),
                            ("diff", lambda d: ["diff", str(d / "good"), str(d / "x")])):
            cases.append(Case(L, f"bench record, {name}: {mname}", argv, want=0, setup=_bench_edit(change),
                              check=no_escapes))
    cases += [
        Case(L, "bench record, run.device a string: UI load", runner=ui_runner, want=0,
             setup=lambda d: (_bench_edit(_set("run.device", "b"))(d), shutil.rmtree(d / "x"),
                              shutil.move(str(d / "good"), str(d / "x"))) and None, timeout=90),
        Case(L, "graphs: [] with kernels: UI load", runner=ui_runner, words=("graph",),
             setup=_manifest_edit(lambda m: m.__setitem__("graphs", [])), timeout=90),
        Case(L, "a kernel naming a missing graph: UI load", runner=ui_runner, words=("graph",),
             setup=_manifest_edit(lambda m: [k.__setitem__("graph", "nope") for k in m["kernels"]]), timeout=90),
        Case(L, "KERNELSCOPE_THEME=no-such-theme: UI load", runner=ui_runner, want=0, setup=lambda d: bundle(d, "x"),
             env={"KERNELSCOPE_THEME": "no-such-theme"}, timeout=90),
        Case(L, "talk: a NUL byte in a bundle path", runner=talk_probe, words=("null",),
             setup=lambda d: _talk(d, {"step": [{"bundle": "b\0x"}]})),
        Case(L, "talk: JSON nested 3000 deep", runner=talk_probe, words=("nested",),
             setup=lambda d: _talk(d, '{"step": ' + "[" * 3000 + "]" * 3000 + "}")),
        Case(L, "talk: TOML nested 3000 deep", lambda d: ["talk", str(d / "t.toml")], words=("nested",),
             setup=lambda d: write(d / "t.toml", "a = " + "[" * 3000 + "]" * 3000 + "\n")),
        Case(L, "talk: a FIFO as the script", lambda d: ["talk", str(d / "t.toml")], words=("regular file",),
             setup=lambda d: os.mkfifo(d / "t.toml"), timeout=30),
        Case(L, "a trace with one 300 MB line: memory", lambda d: ["open", str(d / "trace"), "--no-ui", "-o",
                                                                    str(d / "o")],
             want=0, runner=rss_runner(500), setup=_huge_line_trace, timeout=240),
    ]
    return cases


# -- serve's log ---------------------------------------------------------------------------------------

def serve_log_runner(with_log: bool) -> Callable[[Case, Path, dict], Outcome]:
    def run(case: Case, folder: Path, env: dict) -> Outcome:
        t = time.perf_counter()
        port = free_port()
        log = folder / "serve-debug.log"
        out_path, err_path = folder / "serve.out", folder / "serve.err"
        with open(out_path, "wb") as so, open(err_path, "wb") as se:
            proc = subprocess.Popen([PY, "-m", "kernelscope", "serve", "--port", str(port),
                                     *(["--log", str(log)] if with_log else [])],
                                    cwd=str(folder / "cwd"), env=env, stdin=subprocess.DEVNULL, stdout=so, stderr=se,
                                    start_new_session=True)
            try:
                deadline = time.time() + 60
                token = ""
                while time.time() < deadline and not token and proc.poll() is None:
                    m = re.search(r"\?token=([\w-]+)", err_path.read_text(errors="replace"))
                    token = m.group(1) if m else ""
                    time.sleep(0.2)
                o = Outcome(0, "", "", 0.0)
                if not token:
                    o.problems.append("serve printed no URL")
                else:
                    for path in (f"/?token={token}", "/?token=wrong", f"/nothing?token={token}"):
                        http_status(f"http://127.0.0.1:{port}{path}", Referer=f"http://127.0.0.1:{port}/?token={token}")
                    time.sleep(0.5)
            finally:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
        out, err = out_path.read_text(errors="replace"), err_path.read_text(errors="replace")
        o.out, o.err, o.seconds = "", "", time.perf_counter() - t  # judged here, not as a one-line error
        if token:
            printed = (out + err).count(token)
            if printed != 1:
                o.problems.append(f"the token appears {printed} times on the terminal (want once: the URL)")
            lines = [x for x in (out + err).splitlines() if x.strip()]
            if not lines or "token=" not in lines[-1]:
                o.problems.append(f"the URL is not the last line printed ({len(lines)} lines)")
            if "GET /" in out + err or "Referer" in out + err:
                o.problems.append("logged requests to the terminal")
            if with_log:
                if not log.is_file():
                    o.problems.append("--log wrote no file")
                else:
                    if token in log.read_text(errors="replace"):
                        o.problems.append("the --log file holds the token")
                    if stat.S_IMODE(log.stat().st_mode) & 0o077:
                        o.problems.append(f"the --log file is mode {stat.S_IMODE(log.stat().st_mode):o}")
                    if "GET /" not in log.read_text(errors="replace"):
                        o.problems.append("the --log file has no request lines")
        return o
    return run


def serve_log_cases() -> list[Case]:
    return [Case("serve log", "requests with the token: nothing logged, the URL printed once, last",
                 runner=serve_log_runner(False), want=0, timeout=90),
            Case("serve log", "--log FILE: 0600, the token redacted", runner=serve_log_runner(True), want=0,
                 timeout=90),
            Case("serve log", "--log into a missing folder", lambda d: ["serve", "--port", str(free_port()), "--log",
                                                                        str(d / "nowhere" / "x.log")],
                 words=("nowhere",), timeout=60)]


# -- replace (--force) under a kill -------------------------------------------------------------------

def replace_kill_runner(when: int) -> Callable[[Case, Path, dict], Outcome]:
    """SIGKILL injected at the WHEN-th rename of `open --force` over an existing bundle; the next start
    must find the old bundle whole (or the new one), never a folder without bundle.json."""
    def run(case: Case, folder: Path, env: dict) -> Outcome:
        t = time.perf_counter()
        shutil.copytree(TRACE_FIXTURE, folder / "trace")
        b = folder / "outs" / "B"
        first = run_cli(["open", str(folder / "trace"), "--no-ui", "-o", str(b)], folder, env, 120)
        if first.rc != 0:
            first.problems.append(f"the first open failed: {first.err.strip()[-200:]}")
            return first
        old_manifest = (b / "bundle.json").read_bytes()
        calls = "rename,renameat,renameat2"
        subprocess.run(["strace", "-f", "-o", os.devnull, "-e", f"trace={calls}", "-e",
                        f"inject={calls}:signal=SIGKILL:when={when}", PY, "-m", "kernelscope", "open",
                        str(folder / "trace"), "--no-ui", "--force", "-o", str(b)], cwd=str(folder / "cwd"), env=env,
                       capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
        shown = run_cli(["show", str(b)], folder, env, 60)  # the next start, a reader
        o = Outcome(0, "", "", time.perf_counter() - t)
        if shown.rc != 0:
            o.problems.append(f"after the kill, `show B` says: {(message_lines(shown.err) or ['?'])[-1][:160]}")
        again = run_cli(["open", str(folder / "trace"), "--no-ui", "--force", "-o", str(b)], folder, env, 120)
        if again.rc != 0:
            o.problems.append(f"after the kill, `open --force -o B` says: {(message_lines(again.err) or ['?'])[-1][:160]}")
        if not (b / "bundle.json").is_file():
            o.problems.append("B has no bundle.json")
        elif shown.rc == 0 and not old_manifest:
            o.problems.append("the old manifest was empty")
        left = [p.name for p in b.parent.glob(".kernelscope-tmp-*")]
        if left:
            o.problems.append(f"left {', '.join(left[:3])} after the next start")
        return o
    return run


def replace_cases() -> list[Case]:
    if not shutil.which("strace"):
        return [Case("replace under a kill", f"SIGKILL at rename {w} (skipped: needs strace)", skip="needs strace")
                for w in (3, 5, 8)]
    return [Case("replace under a kill", f"SIGKILL at rename {w} of open --force", runner=replace_kill_runner(w),
                 want=0, timeout=400) for w in (1, 3, 5, 8)]


# -- full disks and read-only destinations (tmpfs and bind mounts; root only) --------------------------

class Mounts:
    """Small file systems the full-disk and read-only cases write into, made once (root) and unmounted
    at the end."""

    lock = threading.Lock()
    made: list[Path] = []
    failure = ""

    @classmethod
    def full(cls, root: Path) -> Path:
        """A 4 MB tmpfs filled to the last block."""
        with cls.lock:
            path = root / "mnt-full"
            if path.is_dir() and path in cls.made:
                return path
            path.mkdir(exist_ok=True)
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(path)], check=True,
                           capture_output=True)
            cls.made.append(path)
            with open(path / ".filler", "wb") as fh:
                try:
                    while True:
                        fh.write(b"\0" * 65536)
                        fh.flush()
                except OSError:
                    pass
            try:
                with open(path / ".filler2", "wb") as fh:  # the last partial block
                    while True:
                        fh.write(b"\0" * 512)
                        fh.flush()
            except OSError:
                pass
            return path

    @classmethod
    def read_only(cls, root: Path) -> Path:
        with cls.lock:
            path = root / "mnt-ro"
            if path in cls.made:
                return path
            path.mkdir(exist_ok=True)
            write(path / "existing.txt", "keep me")
            subprocess.run(["mount", "--bind", str(path), str(path)], check=True, capture_output=True)
            cls.made.append(path)
            subprocess.run(["mount", "-o", "remount,ro,bind", str(path)], check=True, capture_output=True)
            return path

    @classmethod
    def unmount(cls) -> None:
        for path in reversed(cls.made):
            subprocess.run(["umount", "-l", str(path)], capture_output=True)
        cls.made.clear()


def can_mount() -> str:
    """'' when this process may mount (root with mount(8)); else why not."""
    if os.geteuid() != 0:
        return "needs root"
    if not shutil.which("mount"):
        return "needs mount(8)"
    probe = Path(tempfile.mkdtemp(prefix="kernelscope-mount-probe-"))
    try:
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(probe)], capture_output=True)
        if r.returncode != 0:
            return "needs root (mount refused: " + r.stderr.decode(errors="replace").strip()[:80] + ")"
        subprocess.run(["umount", str(probe)], capture_output=True)
        return ""
    finally:
        shutil.rmtree(probe, ignore_errors=True)


def _nothing_partial(where: Callable[[Path], Path], names: tuple[str, ...]) -> Callable[[Path, Outcome], None]:
    def check(d: Path, o: Outcome) -> None:
        base = where(d)
        left = [p.name for p in base.iterdir() if p.name in names or p.name.startswith((".kernelscope-tmp", "."
                                                                                       "r.html", ".kernelscope-probe"))]
        if left:
            o.problems.append(f"left {', '.join(left[:3])} on the full disk")
    return check


def disk_cases() -> list[Case]:
    D = "full disks"
    why_not = can_mount()
    full = lambda d: Mounts.full(d.parent)  # noqa: E731
    ro = lambda d: Mounts.read_only(d.parent)  # noqa: E731
    cases = [
        Case(D, "open TRACE -o FULL/o", lambda d: ["open", str(d / "trace"), "--no-ui", "-o", str(full(d) / d.name)],
             words=("space",), setup=lambda d: shutil.copytree(TRACE_FIXTURE, d / "trace"),
             check=_nothing_partial(full, ()), timeout=90),
        Case(D, "report -o FULL/r.html", lambda d: ["report", str(d / "x"), "--format", "html", "-o",
                                                    str(full(d) / f"{d.name}.html")],
             words=("space",), setup=lambda d: bundle(d, "x"),
             check=lambda d, o: [o.problems.append("a partial report was left") for p in full(d).glob(f"*{d.name}*")],
             timeout=60),
        Case(D, "capture -o FULL/out (refused before compiling)", lambda d: capture(d, f"{d / 't.py'}::f", "--args", "f32[8]",
                                                                                   out=str(full(d) / d.name)),
             words=("space",), setup=lambda d: write(d / "t.py", GOOD_FN), check=_nothing_partial(full, ()),
             timeout=60),
        Case(D, "capture with a full TMPDIR", lambda d: capture(d, f"{d / 't.py'}::f", "--args", "f32[8]"), words=("TMPDIR",),
             setup=lambda d: write(d / "t.py", GOOD_FN), timeout=60, env={"TMPDIR": "@FULL"}),
        Case(D, "capture -o READONLY/out (refused before compiling)", lambda d: capture(d, f"{d / 't.py'}::f", "--args", "f32[8]",
                                                                                       out=str(ro(d) / d.name)),
             words=("read-only",), setup=lambda d: write(d / "t.py", GOOD_FN), timeout=60),
        Case(D, "open TRACE --force over a bundle on a read-only mount",
             lambda d: ["open", str(d / "trace"), "--no-ui", "--force", "-o", str(ro(d) / "existing-bundle")],
             words=("read-only",), setup=lambda d: shutil.copytree(TRACE_FIXTURE, d / "trace"), timeout=60),
    ]
    for c in cases:
        c.needs_mount = why_not or None
    return cases


# -- processes the user's code started ------------------------------------------------------------------

FORKS_AT_IMPORT = ("import os, time\n"
                   "if os.fork() == 0:\n    time.sleep(300)\n    os._exit(0)\n"
                   "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        time.sleep(300)\n"
                   "        os._exit(0)\n    os._exit(0)\n")


def process_cases(compiles: bool) -> list[Case]:
    P = "processes"
    cases = [Case(P, "a child forked at import and a double-forked daemon, then a failed import",
                  lambda d: capture(d, f"{d / 't.py'}::f", "--args", "f32[8]"), words=("boom",), timeout=150,
                  setup=lambda d: write(d / "t.py", FORKS_AT_IMPORT + "raise RuntimeError('boom')\n\n" + GOOD_FN))]
    if compiles:
        cases.append(Case(P, "a child forked at import and a double-forked daemon, then a good capture",
                          lambda d: capture(d, f"{d / 't.py'}::f", "--args", "f32[8]"), want=0, timeout=400, compiles=True,
                          setup=lambda d: write(d / "t.py", FORKS_AT_IMPORT + "\n" + GOOD_FN)))
    return cases


# -- received bundles ------------------------------------------------------------------------------------

def _received(d: Path) -> None:
    b = bundle(d, "x")
    m = manifest(b)
    m["target"]["file"] = str(d / "gone" / "add_relu.py")
    (b / "bundle.json").write_text(json.dumps(m))
    # The bundle's own copy of the file: its sender's code, which must not run unasked.
    (b / m["source"]["path"]).write_text(f"open({str(d / 'RAN')!r}, 'w').write('ran')\n" +
                                         (b / m["source"]["path"]).read_text())


def _copy_not_run(d: Path, o: Outcome) -> None:
    if (d / "RAN").exists():
        o.problems.append("ran the bundle's own copy of the source")


def received_cases() -> list[Case]:
    R = "received bundles"
    return [
        Case(R, "bench of a bundle whose file is missing", lambda d: ["bench", str(d / "x"), "--device", "cpu", "-q"],
             words=("--run-bundled-source", "source/add_relu.py"), setup=_received, check=_copy_not_run, timeout=90),
        Case(R, "bench --counts of a bundle whose file is missing", lambda d: ["bench", str(d / "x"), "--counts"],
             want=None, setup=_received, check=_copy_not_run, timeout=90),
    ]


# -- the environment -----------------------------------------------------------------------------------

def shell_runner(shell: str) -> Callable[[Case, Path, dict], Outcome]:
    """The CLI started from ``sh -c SHELL`` ({ks} is `python -m kernelscope`, {d} the case folder): for a
    deleted cwd or a closed stdout, which Popen cannot set up itself."""
    def run(case: Case, folder: Path, env: dict) -> Outcome:
        t = time.perf_counter()
        cmd = shell.format(ks=f"{PY} -m kernelscope", d=str(folder), fixture=str(FIXTURE), trace=str(TRACE_FIXTURE))
        proc = subprocess.Popen(["sh", "-c", cmd], cwd=str(folder / "cwd"), env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=case.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            return Outcome(None, out.decode(errors="replace"), err.decode(errors="replace"), time.perf_counter() - t, True)
        return Outcome(proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"),
                       time.perf_counter() - t)
    return run


def _no_home_cache(d: Path, o: Outcome) -> None:
    if (d / "home" / ".cache").exists():
        o.problems.append("wrote under $HOME/.cache although KERNELSCOPE_CACHE was set")
    if not list((d / "cache").rglob("bundle.json")):
        o.problems.append("wrote nothing under KERNELSCOPE_CACHE")


def env_cases() -> list[Case]:
    V = "environment"
    return [
        Case(V, "a deleted working folder: capture with the default -o",
             runner=shell_runner("mkdir {d}/gone && cd {d}/gone && rmdir {d}/gone && exec {ks} capture add_relu -q"),
             words=("current folder",), timeout=60),
        Case(V, "a deleted working folder: capture -o ABSOLUTE",
             runner=shell_runner("mkdir {d}/gone && cd {d}/gone && rmdir {d}/gone && exec {ks} capture add_relu -q "
                                 "-o {d}/out"), words=("current folder",), timeout=60),
        Case(V, "a deleted working folder: show a relative path", runner=shell_runner(
            "mkdir {d}/gone && cd {d}/gone && rmdir {d}/gone && exec {ks} show rel/bundle"),
             words=("current folder",), timeout=60),
        Case(V, "stdout closed: show", runner=shell_runner("exec {ks} show {fixture} >&-"), words=("closed",)),
        Case(V, "stdout /dev/full: show", runner=shell_runner("exec {ks} show {fixture} >/dev/full"), words=("space",)),
        Case(V, "stdout /dev/full: report md", runner=shell_runner("exec {ks} report {fixture} --format md >/dev/full"),
             words=("space",)),
        Case(V, "KERNELSCOPE_CACHE for open's default -o", lambda d: ["open", str(TRACE_FIXTURE), "--no-ui"], want=0,
             check=_no_home_cache, timeout=90),
        Case(V, "a TMPDIR holding a quote", lambda d: capture(d, f"{d / 't.py'}::f", "--args", "f32[8]"), words=("TMPDIR",),
             setup=lambda d: (write(d / "t.py", GOOD_FN), (d / "tmp" / "it's").mkdir()),
             env={"TMPDIR": "@TMP/it's"}, timeout=60),
        Case(V, "PYTHONWARNINGS=error", lambda d: capture(d, f"{d / 't.py'}::f", "--args", "f32[8]"), want=None,
             setup=lambda d: write(d / "t.py", GOOD_FN), env={"PYTHONWARNINGS": "error"}, timeout=400,
             check=lambda d, o: o.rc == 2 and "your function" in o.err and "warning" in o.err.lower()
             and o.problems.append("blamed the user's function for a warning raised as an error")),
    ]


# == round three (issue 36): what run starts, what a bundle claims, what reaches the terminal ==============

GPU_ADD_RELU = REPO / "tests" / "fixtures" / "gpu" / "add_relu"
CPU_TWO_CALLS = REPO / "tests" / "fixtures" / "cpu" / "add_relu_two_calls"


def _canary_not_written(d: Path, o: Outcome) -> None:
    if (d / "RAN").exists():
        o.problems.append("ran the bundle's own code unasked (the canary was written)")


def _claims_made_here(d: Path, remember_then_edit: bool = False) -> None:
    """A GPU fixture whose manifest says `run` on this host, with a canary at the top of its output code."""
    b = d / "x"
    shutil.copytree(GPU_ADD_RELU, b)
    m = manifest(b)
    m["target"] = {"spec": "python train.py", "kind": "command", "origin": "run", "file": "", "name": "",
                   "host": socket.gethostname(), "command": ["python", "train.py"]}
    m["environment"]["host"] = socket.gethostname()
    (b / "bundle.json").write_text(json.dumps(m))
    code = b / m["graphs"][0]["files"]["output_code"]
    if remember_then_edit:  # this machine's record kept for the code as it was, then the code changed
        subprocess.run([PY, "-c", "import sys\nfrom kernelscope.bundle import provenance\n"
                        "from kernelscope.bundle.io import read_bundle\n"
                        "assert provenance.remember(read_bundle(sys.argv[1]))", str(b)],
                       env={**os.environ, "PYTHONPATH": str(REPO), "KERNELSCOPE_CACHE": str(d / "cache")}, check=True)
    code.write_text(f"open({str(d / 'RAN')!r}, 'w').write('ran')\n" + code.read_text())


def provenance_cases() -> list[Case]:
    P = "bundle provenance"
    return [
        Case(P, "bench of a bundle claiming origin run and this host", lambda d: ["bench", str(d / "x"), "-q"],
             words=("--run-bundle-code",), setup=_claims_made_here, check=_canary_not_written, timeout=90),
        Case(P, "bench of a bundle made here whose code changed since", lambda d: ["bench", str(d / "x"), "-q"],
             words=("--run-bundle-code",), setup=lambda d: _claims_made_here(d, True), check=_canary_not_written,
             timeout=90),
    ]


def run_cli_args(d: Path, script: str, *args: str, out: str | None = "out", ui: bool = False) -> list[str]:
    return ["run", *([] if ui else ["--no-ui"]), "-q", *(["-o", str(d / out)] if out else []), "--", PY,
            str(d / script), *args]


FORGED_RUN_EVENTS = ("import json, os, sys\n"
                     "hook = json.loads(os.environ['KERNELSCOPE_RUN_HOOK'])\n"
                     "ev = {'phase': 'environment', 'message': 'x', 'environment': {'device': 'cpu' + "
                     + repr(ESC_ALL) + ", 'torch': " + repr(ESC_TITLE) + ", " + repr(ESC_CLIP) + ": 'k'}}\n"
                     "os.write(hook['event_fd'], (json.dumps(ev) + '\\n').encode())\n"
                     "import torch\n"
                     "f = torch.compile(lambda x: x.sin() + 1)\n"
                     "f(torch.ones(8))\n")


def _forged_compile_time(d: Path) -> None:
    subprocess.run([PY, "-m", "kernelscope", "open", str(TRACE_FIXTURE), "--no-ui", "-o", str(d / "x")], check=True,
                   env={**os.environ, "PYTHONPATH": str(REPO), "KERNELSCOPE_CACHE": str(d / "cache")},
                   capture_output=True)
    m = manifest(d / "x")
    ct = m["extra"]["compile_time"]
    ct["compiles"][0]["function"] = "fn" + ESC_ALL
    ct["compiles"][0]["phases"] = {"Dynamo" + ESC_TITLE + "```": 1.0, **ct["compiles"][0]["phases"]}
    ct["phases"] = dict(ct["compiles"][0]["phases"])
    ct["kernels"] = [{"compile_id": "0/0", "name": "k" + ESC_CLIP, "compile_s": 1.0, "autotune_cache": "",
                      "configs": 1, "kernel_id": "", "autotune_s": None, "total_s": 1.0, "lines": ["a.py:1" + ESC_ALL]}]
    (d / "x" / "bundle.json").write_text(json.dumps(m))


def _safe_default_out(d: Path, o: Outcome) -> None:
    made = list((d / "cwd" / "kernelscope-captures").glob("*"))
    if len(made) != 1:
        o.problems.append(f"made {len(made)} default -o folders")
    elif not re.fullmatch(r"[A-Za-z0-9_-]+", made[0].name):
        o.problems.append(f"the default -o folder is named {made[0].name!r}")


def run_terminal_cases(compiles: bool) -> list[Case]:
    T = "run's terminal output"
    evil_name = "ev" + ESC_TITLE.replace("/", "") + "il\n'q.py"
    cases = [
        Case(T, "a failing program's last stderr line with escapes, its name too",
             lambda d: run_cli_args(d, evil_name), words=("status 3", "boom"), check=no_escapes,
             setup=lambda d: write(d / evil_name, f"import sys\nsys.stderr.write({('boom ' + ESC_ALL)!r} + '\\n')\n"
                                                  "sys.exit(3)\n"), timeout=60),
        Case(T, "the default -o of a script named with escapes, a newline and a quote",
             lambda d: run_cli_args(d, evil_name, out=None), words=("no graph compiled",),
             check=lambda d, o: (no_escapes(d, o), _safe_default_out(d, o)),
             setup=lambda d: write(d / evil_name, "print('hi')\n"), timeout=60),
        Case(T, "report md of forged compile-phase, function and kernel names",
             lambda d: ["report", str(d / "x"), "--format", "md"], want=0, check=no_escapes,
             setup=_forged_compile_time, timeout=90),
        Case(T, "report html of forged compile-phase, function and kernel names",
             lambda d: ["report", str(d / "x"), "--format", "html"], want=0, check=no_escapes,
             setup=_forged_compile_time, timeout=90),
    ]
    if compiles:
        cases.append(Case(T, "forged environment fields on run's event pipe, then a compile",
                          lambda d: run_cli_args(d, "t.py"), want=0, check=no_escapes, compiles=True,
                          setup=lambda d: write(d / "t.py", FORGED_RUN_EVENTS), timeout=400))
    return cases


DAEMONS = ("import os, shlex, subprocess, sys, time\n"
           "sleeper = [sys.executable, '-c', 'import time; time.sleep(300)', sys.argv[1]]\n"
           "subprocess.Popen(['setsid', *sleeper], env={}, close_fds=False, stdout=subprocess.DEVNULL,\n"
           "                 stderr=subprocess.DEVNULL)\n"
           "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        os.execve(sys.executable, sleeper, {})\n"
           "    os._exit(0)\n"
           "subprocess.Popen(f'nohup setsid {shlex.join(sleeper)} >/dev/null 2>&1 &', shell=True,\n"
           "                 env={'PATH': os.defpath})\n"
           "time.sleep(1.0)\nprint('started them')\n")


def _tagged(tag: str) -> list[int]:
    """Live processes whose command line holds ``tag`` (what cleared its environment carries no case marker)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if tag.encode() in (entry / "cmdline").read_bytes().split(b"\0") and \
                    (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
                found.append(int(entry.name))
        except (OSError, IndexError):
            continue
    return found


def _no_daemons(d: Path, o: Outcome) -> None:
    tag = f"ks-daemon-{d.name}"
    if "started them" not in (d / "out" / "logs" / "stdout.txt").read_text(errors="replace"):
        o.problems.append("the program did not start its daemons")
    time.sleep(0.3)
    left = _tagged(tag)
    if left:
        o.problems.append(f"{len(left)} daemon(s) outlived the run")
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    if o.seconds > 8:
        o.problems.append(f"took {o.seconds:.0f} s (daemons holding the event pipe stall it)")


SLEEPS = "import time\nprint('ready', flush=True)\nwhile True:\n    time.sleep(0.2)\n    print('tick', flush=True)\n"


def _work_printed(folder: Path, word: str) -> bool:
    return any(word in (p / "stdout.txt").read_text(errors="replace")
               for p in (folder / "tmp").glob("kernelscope-work-*") if (p / "stdout.txt").is_file())


def run_signal_runner(sig: int, in_pty: bool = False) -> Callable[[Case, Path, dict], Outcome]:
    """SIG to `kernelscope run` (in a pty: under the run screen) once the program printed: it must end by the
    signal, with a bundle saying so (not Ctrl-C, not the program's SIGKILL), and leave nothing."""
    def run(case: Case, folder: Path, env: dict) -> Outcome:
        import pty
        import select

        write(folder / "s.py", SLEEPS)
        out = folder / "out"
        t = time.perf_counter()
        argv = [PY, "-m", "kernelscope", "run", *([] if in_pty else ["--no-ui", "-q"]), "-o", str(out), "--", PY,
                str(folder / "s.py")]
        main_fd = None
        if in_pty:
            main_fd, child_end = pty.openpty()
            os.set_blocking(main_fd, False)
            proc = subprocess.Popen(argv, cwd=str(folder / "cwd"), env={**env, "TERM": "xterm-256color"},
                                    stdin=child_end, stdout=child_end, stderr=child_end, start_new_session=True)
            os.close(child_end)
        else:
            proc = subprocess.Popen(argv, cwd=str(folder / "cwd"), env=env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        seen = b""

        def drain() -> None:
            nonlocal seen
            if main_fd is not None and select.select([main_fd], [], [], 0.1)[0]:
                try:
                    seen += os.read(main_fd, 1 << 16)
                except OSError:
                    pass

        try:
            deadline = time.time() + 60
            while not _work_printed(folder, "tick") and time.time() < deadline and proc.poll() is None:
                drain()
                time.sleep(0.1)
            proc.send_signal(sig)
            deadline = time.time() + 40
            while proc.poll() is None and time.time() < deadline:
                drain()
                time.sleep(0.05)
            if proc.poll() is None:
                proc.kill()
            err = seen.decode(errors="replace") if in_pty else proc.stderr.read().decode(errors="replace")
        finally:
            if main_fd is not None:
                os.close(main_fd)
        name = signal.Signals(sig).name
        o = Outcome(2 if proc.returncode == -sig else proc.returncode, "", "", time.perf_counter() - t)
        o.err = f"(ended by {name})"
        if proc.returncode != -sig:
            o.problems.append(f"ended with {proc.returncode}, not by {name}")
        if "internal error" in err or "Traceback" in err:
            o.problems.append("printed an internal error or a traceback")
        try:
            m = manifest(out)
            if (m["target"].get("stopped") or {}).get("reason") != f"signal:{name}":
                o.problems.append(f"recorded the stop as {(m['target'].get('stopped') or {}).get('reason')!r}")
            if "Ctrl-C" in m.get("error", "") or "SIGKILL" in m.get("error", ""):
                o.problems.append(f"the bundle says: {m.get('error')}")
        except (OSError, ValueError):
            o.problems.append("wrote no bundle")
        if list((folder / "tmp").glob("kernelscope-work-*")) or list(folder.rglob(".kernelscope-tmp-*")):
            o.problems.append(f"{name} left a work or staging folder")
        return o
    return run


def sigkill_sweep_runner(case: Case, folder: Path, env: dict) -> Outcome:
    """kill -9 of `kernelscope run` orphans what the program started; the next start must kill it."""
    tag = f"ks-orphan-{folder.name}"
    write(folder / "s.py", "import subprocess, sys, time\n"
                           f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', {tag!r}])\n"
                           "print('tick', flush=True)\ntime.sleep(300)\n")
    t = time.perf_counter()
    proc = subprocess.Popen([PY, "-m", "kernelscope", "run", "--no-ui", "-q", "-o", str(folder / "out"), "--", PY,
                             str(folder / "s.py")], cwd=str(folder / "cwd"), env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 60
    while not _tagged(tag) and time.time() < deadline:
        time.sleep(0.1)
    proc.kill()
    proc.wait()
    o = Outcome(0, "", "", 0.0)
    if not _tagged(tag):
        o.problems.append("the program's child never started")
    nxt = run_cli(["run", "--no-ui", "-q", "-o", str(folder / "next"), "--", PY, "-c", "pass"], folder, env, 60)
    deadline = time.time() + 5
    while _tagged(tag) and time.time() < deadline:
        time.sleep(0.1)
    if _tagged(tag):
        o.problems.append("the next start left the killed run's orphan running")
    if nxt.rc != 2:
        o.problems.append(f"the next start: exit {nxt.rc}: {nxt.err.strip()[-200:]}")
    for p in list((folder / "tmp").glob("kernelscope-work-*")):
        o.problems.append(f"{p.name} left after the next start")
    o.seconds = time.perf_counter() - t
    return o


def run_process_cases() -> list[Case]:
    R = "run's processes"
    return [
        Case(R, "setsid, double-forked and nohup daemons with emptied environments",
             lambda d: run_cli_args(d, "daemons.py", f"ks-daemon-{d.name}"), words=("no graph compiled",),
             setup=lambda d: write(d / "daemons.py", DAEMONS), check=_no_daemons, timeout=60),
        Case(R, "SIGTERM mid-run", runner=run_signal_runner(signal.SIGTERM), timeout=120),
        Case(R, "SIGHUP mid-run", runner=run_signal_runner(signal.SIGHUP), timeout=120),
        Case(R, "the terminal closing under the run screen (SIGHUP in a pty)",
             runner=run_signal_runner(signal.SIGHUP, in_pty=True), timeout=120),
        Case(R, "SIGTERM under the run screen (pty)", runner=run_signal_runner(signal.SIGTERM, in_pty=True),
             timeout=120),
        Case(R, "kill -9 of run: the next start sweeps the program's orphans", runner=sigkill_sweep_runner,
             want=0, timeout=150),
    ]


def _phase_trace(d: Path, pairs: int = 10_000) -> None:
    shutil.copytree(TRACE_FIXTURE, d / "trace")
    names = ["GraphLowering.run", "Scheduler.__init__", "Scheduler.codegen", "async_compile.wait"]
    with open(d / "trace" / "zz_phases.log", "w") as fh:
        t = 10**12
        for i in range(pairs):
            for name, ph, dt in (("inductor_compile", "B", 0), (names[i % 4], "B", 1), (names[i % 4], "E", 3),
                                 ("inductor_compile", "E", 4)):
                ev = {"name": name, "ph": ph, "ts": t + dt, "pid": 0, "cat": "dynamo_timed",
                      "args": {"compile_id": "0/0"}}
                fh.write(TRACE_HEAD + json.dumps({"chromium_event": {}, "frame_id": 0, "frame_compile_id": 0,
                                                  "attempt": 0, "has_payload": "0" * 32}) + "\n\t" +
                         json.dumps(ev) + "\n")
            t += 5


def size_round3_cases() -> list[Case]:
    S = "stream sizes"
    big_stderr = ("import sys\nline = 'INFO step 123456 loss=0.123 an ordinary log line of the program\\n' * 10000\n"
                  "for _ in range(600):\n    sys.stderr.write(line)\n")
    one_line = "import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(400):\n    sys.stderr.write(chunk)\n"
    return [
        Case(S, "run of a program writing 400 MB of ordinary stderr lines: memory",
             lambda d: run_cli_args(d, "t.py"), words=("no graph compiled",), runner=rss_runner(300),
             setup=lambda d: write(d / "t.py", big_stderr), timeout=240),
        Case(S, "run of a program writing one 400 MB stderr line: memory", lambda d: run_cli_args(d, "t.py"),
             words=("no graph compiled",), runner=rss_runner(300), setup=lambda d: write(d / "t.py", one_line),
             timeout=240),
        Case(S, "open of a compile with 40,000 begin/end phase events",
             lambda d: ["open", str(d / "trace"), "--no-ui", "-o", str(d / "o")], want=0, setup=_phase_trace,
             timeout=150),
    ]


def _serve_log_problem(path_setup: Callable[[Path], Path], words: tuple[str, ...]) -> Case:
    return Case("serve log file", "", lambda d: ["serve", "--port", str(free_port()), "--log", str(path_setup(d))],
                words=words, timeout=30)


def _keep_bashrc(d: Path, o: Outcome) -> None:
    if (d / "home" / ".bashrc").read_text() != "keep me\n":
        o.problems.append("the log was appended to the symlink's target")


def _link_to_bashrc(d: Path) -> Path:
    write(d / "home" / ".bashrc", "keep me\n")
    link = d / "serve.log"
    if not link.is_symlink():
        link.symlink_to(d / "home" / ".bashrc")
    return link


def _fifo_log(d: Path) -> Path:
    if not (d / "serve.log").exists():
        os.mkfifo(d / "serve.log")
    return d / "serve.log"


def serve_log_file_runner(kind: str) -> Callable[[Case, Path, dict], Outcome]:
    """serve --log over an existing 0644 file, or with bad request lines that quote the token."""
    def run(case: Case, folder: Path, env: dict) -> Outcome:
        t = time.perf_counter()
        log = folder / "serve.log"
        if kind == "0644":
            write(log, "old\n")
            log.chmod(0o644)
        port = free_port()
        proc = subprocess.Popen([PY, "-m", "kernelscope", "serve", "--port", str(port), "--log", str(log)],
                                cwd=str(folder / "cwd"), env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, start_new_session=True)
        o = Outcome(0, "", "", 0.0)
        try:
            line = proc.stderr.readline().decode(errors="replace")
            m = re.search(r"\?token=([\w-]+)", line)
            if not m:
                o.problems.append(f"serve printed no URL: {line.strip()[:120]}")
                return o
            token = m.group(1)
            if kind == "bad requests":
                for raw in (f"GET /?token={token} HT\x01TP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n",
                            f"GET /?token={token} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nBad Header: {token}\r\n\r\n"):
                    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                        sock.sendall(raw.encode())
                        sock.recv(100)
                time.sleep(0.5)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                _, err = proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                _, err = proc.communicate()
        text = log.read_text(errors="replace")
        if kind == "0644" and stat.S_IMODE(log.stat().st_mode) != 0o600:
            o.problems.append(f"the existing log stayed mode {stat.S_IMODE(log.stat().st_mode):o}")
        if kind == "bad requests":
            if token in text:
                o.problems.append("the log holds the token (in the HTTP library's error report)")
            if "Bad status line" not in text:
                o.problems.append("the log has no record of the bad request")
            if token in err.decode(errors="replace"):
                o.problems.append("the token reached the terminal again")
        o.seconds = time.perf_counter() - t
        return o
    return run


def serve_log_file_cases() -> list[Case]:
    V = "serve log file"
    cases = [_serve_log_problem(_link_to_bashrc, ("symlink",)), _serve_log_problem(_fifo_log, ("FIFO",)),
             _serve_log_problem(lambda d: Path("/dev/full"), ("device",))]
    for c, name in zip(cases, ("a symlink to ~/.bashrc as the log", "a FIFO as the log", "/dev/full as the log")):
        c.name = name
    cases[0].check = _keep_bashrc
    cases += [Case(V, "an existing 0644 log", runner=serve_log_file_runner("0644"), want=0, timeout=90),
              Case(V, "bad request lines and headers quoting the token", runner=serve_log_file_runner("bad requests"),
                   want=0, timeout=90)]
    return cases


def _cpu_alone(d: Path, get_args_line: str | None = None, fx_line: str | None = None) -> None:
    """The CPU fixture as a bundle alone (no function), its first input's get_args() line or FX graphs edited."""
    b = d / "x"
    shutil.copytree(CPU_TWO_CALLS, b)
    m = manifest(b)
    m["target"] = {"spec": "python t.py", "kind": "command", "origin": "run", "file": "", "name": ""}
    (b / "bundle.json").write_text(json.dumps(m))
    for g in m["graphs"]:
        if get_args_line is not None:
            code = b / g["files"]["output_code"]
            code.write_text(code.read_text().replace(
                "    arg0_1 = rand_strided((64, ), (1, ), device='cpu', dtype=torch.float32)", get_args_line, 1))
        if fx_line is not None:
            for key in ("fx-aot", "fx-post-grad"):
                fx = b / g["files"][key]
                fx.write_text(re.sub(r"(\n        return )", "\n        " + fx_line.replace("\\", "\\\\") + r"\1",
                                     fx.read_text(), count=1))


def bundle_code_cases() -> list[Case]:
    B = "bundle code inputs"
    argv = lambda d: ["bench", str(d / "x"), "--run-bundle-code", "--device", "cpu", "-q"]  # noqa: E731
    line = "    arg0_1 = rand_strided(({size}, ), ({stride}, ), device='cpu', dtype=torch.float32)"

    def edited(text: str) -> Callable[[Path], None]:
        return lambda d: _cpu_alone(d, text)

    out = [Case(B, name, argv, words=(words,), setup=edited(line.format(size=size, stride=stride)), timeout=150)
           for name, size, stride, words in (
               ("a negative stride", 64, -1, "negative stride"),
               ("a negative size", -64, 1, "negative size"),
               ("a zero stride over a dense read", 64, 0, "the FX graph declares"),
               ("a 10**30-element input", 10**30, 1, "more than the"),
               ("4 TB", 10**12, 1, "more than the"))]
    # 12 GB under an 8 GB address-space cap (ulimit -v): refused before the allocator is asked
    out.append(Case(B, "12 GB under an 8 GB ulimit -v", words=("more than the",),
                    setup=edited(line.format(size=3 * 10**9, stride=1)), timeout=150,
                    runner=shell_runner("ulimit -v 8000000 && exec {ks} bench {d}/x --run-bundle-code --device cpu -q")))
    out.append(Case(B, "torch.save in the FX graph", argv, words=("torch.save, not a plain ATen op",),
                    setup=lambda d: (_cpu_alone(d, fx_line=f"y = torch.save(arg0_1, {str(d / 'SAVED')!r})")),
                    check=lambda d, o: (d / "SAVED").exists() and o.problems.append("torch.save ran"), timeout=150))
    return out


def _gone_cwd(cmd: str) -> str:
    return "mkdir {d}/gone && cd {d}/gone && rmdir {d}/gone && exec {ks} " + cmd


def no_terminal_cases() -> list[Case]:
    N = "no terminal"
    return [
        Case(N, "run without --no-ui, stdin /dev/null and stdout a pipe", lambda d: run_cli_args(d, "t.py", ui=True),
             words=("no graph compiled",), setup=lambda d: write(d / "t.py", "print('hello')\n"),
             check=lambda d, o: "no terminal" not in o.out and o.problems.append("did not say it runs as --no-ui"),
             timeout=60),
        Case(N, "a program that deletes its working folder", lambda d: run_cli_args(d, "t.py"),
             words=("no graph compiled",),
             setup=lambda d: write(d / "t.py", "import os, shutil\nd = os.getcwd()\nos.chdir('/')\nshutil.rmtree(d)\n"),
             check=lambda d, o: not (d / "out" / "bundle.json").is_file() and o.problems.append("wrote no bundle"),
             timeout=60),
        Case(N, "a deleted working folder: show /abs/bundle", runner=shell_runner(_gone_cwd("show {fixture}")),
             want=0, words=("add_relu",), timeout=60),
        Case(N, "a deleted working folder: samples", runner=shell_runner(_gone_cwd("samples")), want=0,
             words=("add_relu",), timeout=60),
    ]


API_PROBE = r"""
import sys
sys.path.insert(0, sys.argv[1])
import kernelscope
from kernelscope.api import CaptureError
import t
try:
    t.go()
except CaptureError as exc:
    print(f"kernelscope: {exc}", file=sys.stderr); sys.exit(2)
"""


def api_runner(case: Case, folder: Path, env: dict) -> Outcome:
    t = time.perf_counter()
    try:
        proc = subprocess.run([PY, "-c", API_PROBE, str(folder)], cwd=str(folder / "cwd"), env=env,
                              capture_output=True, timeout=case.timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return Outcome(None, "", "", time.perf_counter() - t, True)
    return Outcome(proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace"),
                   time.perf_counter() - t)


API_F = "def f(x):\n    return x + 1\n\n"
API_RECORD_FAILS = ("import os\nimport kernelscope\n\ndef go():\n    out = os.path.join(os.path.dirname(__file__), 'out')\n"
                    "    try:\n        with kernelscope.record(out):\n            os.mkdir(out)\n"
                    "            raise KeyError('the block')\n    except KeyError as exc:\n"
                    "        assert any('could not write' in n for n in exc.__notes__), exc.__notes__\n"
                    "        print('the block raised its own KeyError')\n")
API_RECORD_THREADS = ("import os, threading\nimport kernelscope\n\ndef go():\n"
                      "    here = os.path.dirname(__file__)\n    inside, leave = threading.Event(), threading.Event()\n"
                      "    def first():\n        with kernelscope.record(os.path.join(here, 'a')):\n"
                      "            inside.set(); leave.wait(60)\n"
                      "    t = threading.Thread(target=first); t.start(); inside.wait(60)\n"
                      "    try:\n        with kernelscope.record(os.path.join(here, 'b')):\n            pass\n"
                      "    finally:\n        leave.set(); t.join()\n")


def message_cases(compiles: bool) -> list[Case]:
    M = "messages"
    api = lambda body: (lambda d: write(d / "t.py", body))  # noqa: E731
    cases = [
        Case(M, "a crashing program: said once", lambda d: run_cli_args(d, "t.py"), words=("status 1", "boom"),
             setup=lambda d: write(d / "t.py", "raise RuntimeError('boom')\n"), timeout=60),
        Case(M, "a program that makes -o itself", lambda d: run_cli_args(d, "t.py", str(d / "out")),
             words=("appeared while the program ran",),
             setup=lambda d: write(d / "t.py", "import os, sys\nos.makedirs(sys.argv[1])\n"), timeout=60),
        # the user's site folder on the program's path only (after run's own), not on kernelscope's
        Case(M, "an error in the user's own sitecustomize",
             lambda d: ["run", "--no-ui", "-q", "-o", str(d / "out"), "--", "sh", "-c",
                        f'PYTHONPATH="$PYTHONPATH:{d / "site"}" exec {PY} {d / "t.py"}'],
             words=("no graph compiled",),
             setup=lambda d: (write(d / "t.py", "print('hi')\n"),
                              write(d / "site" / "sitecustomize.py", "raise RuntimeError('my site')\n")),
             check=lambda d, o: "Error in sitecustomize" not in (d / "out" / "logs" / "stderr.txt").read_text()
             and o.problems.append("the user's sitecustomize error was swallowed"), timeout=60),
        Case(M, "API: capture of an int64 meta tensor", runner=api_runner, words=("meta device",),
             setup=api("import torch, kernelscope\n" + API_F + "def go():\n    kernelscope.capture(f, "
                                                                "torch.empty(8, dtype=torch.int64, device='meta'))\n"),
             timeout=120),
        Case(M, "API: capture device='tpu'", runner=api_runner, words=("device='tpu'",),
             setup=api("import kernelscope\n" + API_F + "def go():\n    kernelscope.capture(f, 1.0, device='tpu')\n")),
        Case(M, "API: capture timeout='soon'", runner=api_runner, words=("timeout='soon'",),
             setup=api("import kernelscope\n" + API_F + "def go():\n    kernelscope.capture(f, 1.0, timeout='soon')\n")),
        Case(M, "API: a record whose commit fails keeps the block's exception", runner=api_runner, want=0,
             words=("its own KeyError",), setup=api(API_RECORD_FAILS), timeout=120),
        Case(M, "API: record in two threads at once", runner=api_runner, words=("already recording",),
             setup=api(API_RECORD_THREADS), timeout=120),
    ]
    if compiles:
        cases.append(Case(M, "a program that sets TORCH_TRACE itself", lambda d: run_cli_args(d, "t.py"),
                          words=("its trace went elsewhere",), compiles=True, timeout=400,
                          setup=lambda d: write(d / "t.py", "import os\nos.environ['TORCH_TRACE'] = "
                                                f"{str(d / 'mine')!r}\nimport torch\n"
                                                "f = torch.compile(lambda x: x.sin() + 1)\nf(torch.ones(8))\n")))
    return cases


def all_cases(compiles: bool) -> list[Case]:
    traces = trace_cases()
    _fix_trace_cases(traces)
    cases = [*target_cases(), *args_cases(), *output_cases(compiles), *kill_cases(), *bundle_cases(), *traces,
             *serve_cases(), *size_cases(),
             *escape_cases(), *loader_cases(), *serve_log_cases(), *replace_cases(), *disk_cases(),
             *process_cases(compiles), *received_cases(), *env_cases(),
             *provenance_cases(), *run_terminal_cases(compiles), *run_process_cases(), *size_round3_cases(),
             *serve_log_file_cases(), *bundle_code_cases(), *no_terminal_cases(), *message_cases(compiles)]
    return cases


# -- running them all ------------------------------------------------------------------------------

def snapshot_outside() -> dict[str, object]:
    home = Path.home()
    git = subprocess.run(["git", "status", "--porcelain"], cwd=REPO, capture_output=True, text=True).stdout
    return {"repo": git,
            "home": sorted(p.name for p in home.iterdir()) if home.is_dir() else [],
            "captures": sorted(p.name for p in (home / "kernelscope-captures").glob("*"))
            if (home / "kernelscope-captures").is_dir() else []}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=3, help="cases at a time (default 3)")
    ap.add_argument("--only", help="areas, comma-separated (e.g. 'serve,kills')")
    ap.add_argument("--grep", help="only cases whose name contains this")
    ap.add_argument("--no-compile", action="store_true", help="leave out the cases that compile for real")
    ap.add_argument("--keep", action="store_true", help="keep the temp folder (printed)")
    ap.add_argument("--list", action="store_true", help="list the cases and stop")
    ap.add_argument("-v", "--verbose", action="store_true", help="a line per case as it ends")
    args = ap.parse_args(argv)

    cases = all_cases(not args.no_compile)
    skipped = [c for c in cases if c.needs_non_root and os.geteuid() == 0]
    cases = [c for c in cases if c not in skipped]
    if args.only:
        wanted = {a.strip() for a in args.only.split(",")}
        cases = [c for c in cases if c.area in wanted]
    if args.grep:
        cases = [c for c in cases if args.grep.lower() in c.name.lower()]
    unrunnable = [c for c in cases if c.skip or c.needs_mount]  # said per case below, "skipped: needs root"
    cases = [c for c in cases if c not in unrunnable]
    if args.list:
        for c in cases:
            print(f"{c.area:<22} {c.name}")
        print(f"{len(cases)} cases")
        return 0

    root = Path(tempfile.mkdtemp(prefix="kernelscope-hostile-"))
    before = snapshot_outside()
    started = time.perf_counter()
    results: list[tuple[Case, Outcome]] = [None] * len(cases)  # type: ignore[list-item]
    # Kills and compiles are timed by the machine's load: run them first, the quick ones around them.
    order = sorted(range(len(cases)), key=lambda i: (not (cases[i].area == "kills" or cases[i].compiles), i))
    done = 0

    def one(i: int) -> None:
        nonlocal done
        o = run_case(cases[i], root, i)
        results[i] = (cases[i], o)
        done += 1
        if args.verbose:
            mark = "FAIL" if o.problems else "MSG " if o.wrong else "ok  "
            print(f"[{done:3d}/{len(cases)}] {mark} {o.seconds:5.1f}s {cases[i].area}: {cases[i].name}",
                  file=sys.stderr, flush=True)

    try:
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            list(pool.map(one, order))
    finally:
        Server.stop()
        Mounts.unmount()
        for p in root.rglob("*"):  # read-only folders made by the cases
            try:
                if p.is_dir() and not p.is_symlink():
                    p.chmod(p.stat().st_mode | stat.S_IRWXU)
                elif p.is_file() and not p.is_symlink():
                    p.chmod(p.stat().st_mode | stat.S_IRUSR | stat.S_IWUSR)
            except OSError:
                pass
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    after = snapshot_outside()
    elapsed = time.perf_counter() - started

    outside = []
    if after["repo"] != before["repo"]:
        outside.append("the repository's working tree changed")
    if after["home"] != before["home"] or after["captures"] != before["captures"]:
        outside.append("the home folder changed")

    rows = []
    for area in AREAS:
        rs = [(c, o) for c, o in results if c.area == area]
        if not rs:
            continue
        failed = sum(1 for _, o in rs if o.problems)
        wrong = sum(1 for _, o in rs if not o.problems and o.wrong)
        rows.append((area, len(rs), len(rs) - failed - wrong, wrong, failed))
    total = tuple(sum(r[i] for r in rows) for i in range(1, 5))
    w = max(len(r[0]) for r in rows) if rows else 10
    print(f"{'area':<{w}}  {'cases':>5}  {'clean':>5}  {'wrong message':>13}  {'failed':>6}")
    for area, n, clean, wrong, failed in rows:
        print(f"{area:<{w}}  {n:>5}  {clean:>5}  {wrong:>13}  {failed:>6}")
    print(f"{'total':<{w}}  {total[0]:>5}  {total[1]:>5}  {total[2]:>13}  {total[3]:>6}")
    print(f"({elapsed:.0f} s, {args.jobs} at a time{'; temp folder kept: ' + str(root) if args.keep else ''}"
          f"{f'; {len(skipped)} permission cases skipped: root ignores permissions' if skipped else ''})")
    bad = [(c, o) for c, o in results if o.problems or o.wrong]
    if bad:
        print()
    for c, o in bad:
        kind = "FAILED" if o.problems else "MESSAGE"
        said = (message_lines(o.err) or [""])[-1].strip()[:220]
        print(f"{kind:<7} {c.area}: {c.name}: {'; '.join(o.problems or o.wrong)}"
              f" [exit {o.rc}, {o.seconds:.1f} s]{': ' + repr(said) if said else ''}")
    for c in unrunnable:
        print(f"SKIPPED {c.area}: {c.name}: skipped: {c.skip or c.needs_mount}")
    for line in outside:
        print(f"OUTSIDE {line}")
    return 1 if bad or outside else 0


if __name__ == "__main__":
    raise SystemExit(main())
