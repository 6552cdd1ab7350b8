"""kernelscope.ui.kept_code: the code dataclasses and named tuples generate at start-up, compiled once and kept
for the next start (issue 21, fast open). Each start is a fresh interpreter: the classes are made at import."""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernelscope.ui import kept_code

REPO = Path(__file__).resolve().parents[1]

# A start in miniature: install, make classes, use them, release (after the first frame, in the app).
START = """
import json, sys
from kernelscope.ui import kept_code
kept_code.install()
import collections, dataclasses
@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: int = 2
    tags: tuple = ()
Pair = collections.namedtuple("Pair", "a b")
p = Point(1, tags=("t",))
try:
    p.x = 3
    frozen = False
except dataclasses.FrozenInstanceError:
    frozen = True
state = kept_code._state
out = {"repr": repr(p), "eq": p == Point(1, 2, ("t",)), "hash": hash(p) == hash(Point(1, 2, ("t",))), "frozen": frozen,
       "pair": repr(Pair(1, b=2)), "shadowed": "exec" in vars(dataclasses), "kept": len(state["entries"]),
       "compiled": state["new"]}
kept_code.release()
out["released"] = "exec" not in vars(dataclasses) and "eval" not in vars(collections)
print(json.dumps(out))
"""


def start(cache: Path, **env: str) -> dict:
    environ = {**os.environ, "KERNELSCOPE_CACHE": str(cache), "PYTHONPATH": str(REPO), **env}
    proc = subprocess.run([sys.executable, "-c", START], capture_output=True, text=True, env=environ, cwd=str(cache.parent),
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


SAME = {"repr": "Point(x=1, y=2, tags=('t',))", "eq": True, "hash": True, "frozen": True, "pair": "Pair(a=1, b=2)"}

applies = pytest.mark.skipif(not kept_code.supported(), reason="kept code is for CPython 3.11 and 3.12")


@applies
def test_a_second_start_compiles_nothing_and_makes_the_same_classes(tmp_path):
    first = start(tmp_path / "cache")
    assert {k: first[k] for k in SAME} == SAME
    assert first["shadowed"] and first["compiled"] and first["released"]
    assert (tmp_path / "cache" / kept_code.cache_file().name).is_file()
    second = start(tmp_path / "cache")
    assert {k: second[k] for k in SAME} == SAME
    assert second["kept"] >= 6 and not second["compiled"]  # __init__, __repr__, __eq__, __setattr__, ... and __new__
    assert oct(os.stat(tmp_path / "cache" / kept_code.cache_file().name).st_mode & 0o777) == "0o600"


@applies
@pytest.mark.parametrize("content", [
    b"not marshal at all",
    marshal.dumps({"exec": "a dict, not what we wrote"}),
    marshal.dumps((("kernelscope-kept-code", 1, "another-python", "x"), {})),  # another interpreter's
    marshal.dumps((kept_code._HEADER, {("exec", "def f(): pass"): "a str, not code"})),
    marshal.dumps((kept_code._HEADER, {("exec", "x"): compile("x", "/etc/evil.py", "exec")})),  # not generated code
], ids=["garbage", "shape", "other-python", "not-code", "other-file"])
def test_a_file_not_as_we_wrote_it_is_ignored_and_replaced(tmp_path, content):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / kept_code.cache_file().name).write_bytes(content)
    got = start(cache)
    assert {k: got[k] for k in SAME} == SAME
    assert got["compiled"] and got["kept"] >= 6  # compiled as usual, and written whole for the next start
    assert not start(cache)["compiled"]


@applies
def test_a_file_of_another_user_is_not_read(tmp_path):
    if not hasattr(os, "getuid") or os.getuid() != 0:
        pytest.skip("needs root to give the file to another user")
    cache = tmp_path / "cache"
    start(cache)
    os.chown(cache / kept_code.cache_file().name, 12345, 12345)
    assert start(cache)["compiled"]


@applies
def test_off_by_environment(tmp_path):
    got = start(tmp_path / "cache", KERNELSCOPE_KEPT_CODE="0")
    assert {k: got[k] for k in SAME} == SAME
    assert not got["shadowed"] and not (tmp_path / "cache").exists()


def test_the_ui_imports_textual_with_kept_code():
    """Textual's own dataclasses are made while the app module loads: install() comes before its import."""
    text = (REPO / "kernelscope" / "ui" / "app.py").read_text()
    assert text.index("kept_code.install()") < text.index("from textual")
    assert "kept_code.release()" in text
