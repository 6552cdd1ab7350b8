"""Nothing raw reaches a terminal from a program, a bundle or a trace: what ``kernelscope run`` prints of the
program (its last stderr line, its forged event fields, its name), the run screen's lines, the default -o
folder's name, and a report of forged compile-phase, function and kernel names. No compile."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from kernelscope.capture.program import tail_lines
from kernelscope.capture.spec import decode_event
from tests.conftest import REPO, kernelscope_cmd, rewrite_kernel_rows

# OSC title, OSC 52 clipboard, OSC 8 link, CSI, 8-bit CSI/OSC: every kind of sequence a terminal acts on.
EVIL = "\x1b]0;PWN\x07\x1b]52;c;cHdubmVk\x07\x1b]8;;http://e.example\x1b\\l\x1b]8;;\x1b\\\x1b[2J\x9b31m\x9d0;t\x07"
RAW = ("\x1b", "\x07", "\x9b", "\x9d")


def _raw(text: str) -> list[str]:
    return [c for c in RAW if c in text]


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path / "cache"))


def test_the_programs_last_lines_are_clean_for_the_run_screen(tmp_path):
    log = tmp_path / "stdout.txt"
    log.write_text(f"step 1 {EVIL}\n\x1b]0;title\x07\nplain\n")
    lines = tail_lines(log, 5)
    assert lines == ["step 1 l", "plain"] and not _raw("".join(lines))


def test_the_run_screens_stderr_lines_are_the_programs_never_a_cut_torch_log_line(tmp_path):
    """TORCH_LOGS output code fills the program's stderr; the window read from its end began inside one
    of torch's lines, whose tail ('mic<int> inductor_cpu_integer_div_error{0};') carries no log prefix."""
    from kernelscope.capture.program_command import TORCH_LOG_LINE

    log = tmp_path / "stderr.txt"
    prefix = "V1205 16:10:55.247000 17508 torch/_inductor/graph.py:2722] [0/0] [__output_code] "
    code = "".join(f"{prefix}    static constexpr auto atomic_{i} = inductor_cpu_integer_div_error{{0}};\n"
                   for i in range(400))
    log.write_text("warning: the program's own\n" + code)
    for window in (4000, 4001, 4017, 65536):
        assert tail_lines(log, 2, skip=TORCH_LOG_LINE, window=window) == (
            ["warning: the program's own"] if window > len(code) else []), window


def test_forged_event_fields_are_clean_at_any_depth():
    line = json.dumps({"phase": "environment", "message": "x",
                       "environment": {"device": "cpu" + EVIL, "torch": ["2" + EVIL], EVIL + "k": {"deep": EVIL}}})
    event = decode_event(line)
    assert not _raw(json.dumps(event, ensure_ascii=False))
    assert event["environment"]["device"] == "cpul"


def test_run_of_a_failing_program_with_escapes_is_one_clean_line(tmp_path):
    script = tmp_path / f"evil{EVIL.replace('/', '')}.py"
    script.write_text(f"import sys\nsys.stderr.write({('RuntimeError: boom ' + EVIL)!r} + '\\n')\nsys.exit(3)\n")
    proc = kernelscope_cmd("run", "--no-ui", "-q", "-o", str(tmp_path / "out"), "--", sys.executable, str(script),
                           cwd=str(tmp_path), timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr  # said once, not as `ran ...` and again as `kernelscope: ...`
    assert "exited with status 3" in lines[0] and "RuntimeError: boom" in lines[0]
    assert str(tmp_path / "out") in lines[0]  # where the failed bundle and its logs are
    assert not _raw(proc.stderr + proc.stdout)


def test_the_default_out_folder_names_no_escape_newline_or_quote(tmp_path):
    script = tmp_path / "it's\n" / f"tr{EVIL.replace('/', '')}ain\nx'.py"
    script.parent.mkdir()
    script.write_text("print('hi')\n")
    proc = kernelscope_cmd("run", "--no-ui", "-q", "--", sys.executable, str(script), cwd=str(tmp_path), timeout=120)
    assert proc.returncode == 2  # compiles nothing
    made = [p.name for p in (tmp_path / "kernelscope-captures").iterdir()]
    assert len(made) == 1 and all(c.isalnum() or c in "-_" for c in made[0]), made
    assert made[0].startswith("tr_0_PWN"), made
    assert not _raw(proc.stderr + proc.stdout) and len(proc.stderr.strip().splitlines()) == 1


def _opened(tmp_path: Path) -> Path:
    from kernelscope.ingest.open_trace import bundle_from_trace

    out = tmp_path / "o"
    bundle_from_trace(REPO / "tests" / "fixtures" / "traces" / "mlp_train_cpu", out)
    return out


def test_a_report_of_forged_compile_phase_function_and_kernel_names_is_clean(tmp_path):
    b = _opened(tmp_path)
    m = json.loads((b / "bundle.json").read_text())
    ct = json.loads((b / "sections" / "compile_time.json").read_text())
    c = ct["compiles"][0]
    c["function"] = "fn" + EVIL
    c["phases"] = {("Dynamo" + EVIL + "```"): 1.0, **c["phases"]}
    ct["phases"] = dict(c["phases"])
    ct["kernels"] = [{"compile_id": "0/0", "name": "k" + EVIL, "compile_s": 1.0, "autotune_cache": "",
                      "configs": 1, "kernel_id": "", "autotune_s": None, "total_s": 1.0, "lines": ["a.py:1" + EVIL]}]
    (b / "bundle.json").write_text(json.dumps(m))
    # format 5: rows under kernel_fields, in kernel_index.jsonl
    rewrite_kernel_rows(b, lambda rows, fields: rows[0].__setitem__(fields.index("name"), "triton_" + EVIL))
    (b / "sections" / "compile_time.json").write_text(json.dumps(ct))
    for fmt in ("md", "html"):
        proc = kernelscope_cmd("report", str(b), "--format", fmt, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert not _raw(proc.stdout + proc.stderr), fmt
    md = kernelscope_cmd("report", str(b), "--format", "md", timeout=120).stdout
    assert "fnl" in md.replace("\\", "")
    assert "\n````text\n" in md  # the fence outlasts the ``` in a forged phase name


def test_env_of_the_run_marks_what_it_started(tmp_path):
    from kernelscope.capture.lifeline import JOB_MARKER
    from kernelscope.capture.program import run_environment

    r, w = os.pipe()
    try:
        env = run_environment(tmp_path, "default", w, None, marker="m-1")
    finally:
        os.close(r)
        os.close(w)
    assert env[JOB_MARKER] == "m-1"
