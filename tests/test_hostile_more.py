"""Hostile cases found by scripts/hostile_run.py (issue 14's re-run): escape bytes in a bundle reach no
terminal, report or diff, nor an error line; `serve` refuses a bundle or target it cannot open at once,
instead of serving a page that fails in every tab; sizes in `--args` are ASCII digits."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest

from kernelscope.cli import main
from kernelscope.target import TargetError, parse_args_spec

FIXTURE = Path(__file__).parent / "fixtures" / "gpu" / "add_relu"
KERNEL_ID = "0-0-inference/triton_poi_fused_add_relu_0"
EVIL_NAME = "triton_\x1b]0;pwned\x07\x1b[31mred\x1b[0m_kernel"


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path / "cache"))


def _copy(tmp_path: Path, name: str) -> Path:
    out = tmp_path / name
    shutil.copytree(FIXTURE, out)
    return out


def _escape_bundle(tmp_path: Path) -> Path:
    b = _copy(tmp_path, "evil")
    m = json.loads((b / "bundle.json").read_text())
    m["kernels"][0]["name"] = EVIL_NAME
    m["graph_breaks"] = [{"reason": "break\x1b[2J here", "file": "/repo/samples/add_relu.py", "line": 7, "code": "x"}]
    (b / "bundle.json").write_text(json.dumps(m))
    src = b / m["kernels"][0]["source"]
    src.write_text(src.read_text() + "# \x1b]0;title\x07\x1b[2Jcleared\x08\x00\n")
    return b


@pytest.mark.parametrize("args", [
    ["show", "{b}"],
    ["show", "{b}", "--kernel", "nosuch", "--artifact", "source"],  # the error line lists the kernel names
    ["report", "{b}", "--format", "md"],
    ["report", "{b}", "--format", "html"],
    ["diff", "{good}", "{b}"],
    ["diff", "{good}", "{b}", "--format", "md"],
], ids=["show", "show-error", "report-md", "report-html", "diff", "diff-md"])
def test_escape_bytes_in_names_and_sources_reach_no_output(tmp_path, capsys, args):
    b = _escape_bundle(tmp_path)
    good = _copy(tmp_path, "good")
    rc = main([a.format(b=b, good=good) for a in args])
    out, err = capsys.readouterr()
    assert rc in (0, 2), err
    for text in (out, err):
        assert "\x1b" not in text and "\x07" not in text and "\x08" not in text and "\x00" not in text
    # the name is still there, readable, without its escape sequences
    assert "triton_red_kernel" in out + err


def test_the_kernel_source_keeps_its_text_without_the_escapes(tmp_path, capsys):
    b = _escape_bundle(tmp_path)
    assert main(["show", str(b), "--kernel", KERNEL_ID, "--artifact", "source"]) == 0
    out = capsys.readouterr().out
    assert "def triton_poi_fused_add_relu_0" in out and out.rstrip().endswith("# cleared")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_refuses_a_damaged_bundle_at_once(tmp_path, capsys):
    pytest.importorskip("textual_serve")
    b = _copy(tmp_path, "b")
    m = json.loads((b / "bundle.json").read_text())
    m["kernels"][0]["source"] = "../../etc/passwd"
    (b / "bundle.json").write_text(json.dumps(m))
    rc = main(["serve", str(b), "--port", str(_free_port())])  # a server that started would not return
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert "etc/passwd" in err and "refusing" in err and "serving on" not in err


@pytest.mark.parametrize("what, words", [("{tmp}/nowhere/", "nowhere"), ("{tmp}/nope.py::f", "nope.py: no such file")])
def test_serve_refuses_a_missing_bundle_or_target_at_once(tmp_path, capsys, what, words):
    pytest.importorskip("textual_serve")
    rc = main(["serve", what.format(tmp=tmp_path), "--port", str(_free_port())])
    err = capsys.readouterr().err
    assert rc == 2 and words in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("spec", ["f32[８]", "f32[٣, 4]"])
def test_sizes_are_ascii_digits(spec):
    with pytest.raises(TargetError, match="is not a non-negative integer"):
        parse_args_spec(spec)


def test_an_out_name_too_long_is_a_one_line_error(tmp_path, capsys):
    rc = main(["open", str(tmp_path / "trace.log"), "--no-ui", "-o", str(tmp_path / ("x" * 300))])
    err = capsys.readouterr().err
    assert rc == 2 and "internal error" not in err and len(err.strip().splitlines()) == 1
    assert "File name too long" in err or "no such TORCH_TRACE" in err


def test_check_out_names_a_name_too_long(tmp_path):
    from kernelscope.bundle.io import BundleError, check_out

    with pytest.raises(BundleError, match="cannot write a bundle there"):
        check_out(tmp_path / ("x" * 300), replace=False)


@pytest.mark.parametrize("own, what", [("bundle.json", "own manifest"), ("kernel_index.jsonl", "own kernel index")])
def test_a_report_never_overwrites_its_bundles_manifest(tmp_path, capsys, own, what):
    from kernelscope.bundle.io import read_bundle, save_manifest

    b = _copy(tmp_path, "b")
    save_manifest(read_bundle(b), b)  # written as this release writes it (format 5: a kernel index file)
    before = (b / own).read_bytes()
    rc = main(["report", str(b), "--format", "json", "-o", str(b / own)])
    err = capsys.readouterr().err
    assert rc == 2 and what in err
    assert (b / own).read_bytes() == before


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_a_timeout_that_is_not_a_positive_number_is_refused(tmp_path, capsys, value):
    (tmp_path / "t.py").write_text("def f(x):\n    return x + 1\n")
    rc = main(["capture", f"{tmp_path / 't.py'}::f", "--args", "f32[8]", "--timeout", value, "-o", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and "--timeout must be a positive number" in err
    assert not (tmp_path / "o").exists()
