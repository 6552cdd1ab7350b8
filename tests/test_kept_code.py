"""kernelscope.ui.kept_code: the code dataclasses and named tuples generate at start-up and the regular
expressions modules compile as they load, compiled once and kept for the next start (issue 21, fast open). Each
start is a fresh interpreter: the classes and patterns are made at import."""

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
START = r"""
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
import re
word = re.compile(r"(?P<name>[^\W\d]\w*)\s*=\s*(\d+)", re.M)
raw = re.compile(rb"\x00(?P<n>.)")
found = [m.groupdict() | {"2": m.group(2)} for m in word.finditer("a = 1\nbc=22\n9=3")] + [raw.search(b"x\x00y").group("n").decode()]
p = Point(1, tags=("t",))
try:
    p.x = 3
    frozen = False
except dataclasses.FrozenInstanceError:
    frozen = True
state = kept_code._state
out = {"repr": repr(p), "eq": p == Point(1, 2, ("t",)), "hash": hash(p) == hash(Point(1, 2, ("t",))), "frozen": frozen,
       "pair": repr(Pair(1, b=2)), "found": found, "flags": word.flags, "groups": word.groups,
       "shadowed": "exec" in vars(dataclasses), "kept": len(state["entries"]),
       "patterns": sum(1 for key in state["entries"] if key[0] == "re"), "compiled": state["new"]}
kept_code.release()
out["released"] = "exec" not in vars(dataclasses) and "eval" not in vars(collections) and \
    re._compiler.compile is kept_code._RE_COMPILE
print(json.dumps(out))
"""


def start(cache: Path, **env: str) -> dict:
    environ = {**os.environ, "KERNELSCOPE_CACHE": str(cache), "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])), **env}
    proc = subprocess.run([sys.executable, "-c", START], capture_output=True, text=True, env=environ, cwd=str(cache.parent),
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


SAME = {"repr": "Point(x=1, y=2, tags=('t',))", "eq": True, "hash": True, "frozen": True, "pair": "Pair(a=1, b=2)",
        "found": [{"name": "a", "2": "1"}, {"name": "bc", "2": "22"}, "y"], "flags": 40, "groups": 2}

applies = pytest.mark.skipif(not kept_code.supported(), reason="kept code is for CPython 3.11 and 3.12")


@applies
def test_a_second_start_compiles_nothing_and_makes_the_same_classes(tmp_path):
    first = start(tmp_path / "cache")
    assert {k: first[k] for k in SAME} == SAME
    assert first["shadowed"] and first["compiled"] and first["released"]
    assert (tmp_path / "cache" / kept_code.cache_file().name).is_file()
    second = start(tmp_path / "cache")
    assert {k: second[k] for k in SAME} == SAME
    assert second["kept"] >= 8 and not second["compiled"]  # __init__, __repr__, __eq__, ..., __new__, the patterns
    assert second["patterns"] >= 2
    assert oct(os.stat(tmp_path / "cache" / kept_code.cache_file().name).st_mode & 0o777) == "0o600"


@applies
@pytest.mark.parametrize("content", [
    b"not marshal at all",
    marshal.dumps({"exec": "a dict, not what we wrote"}),
    marshal.dumps((("kernelscope-kept-code", 1, "another-python", "x"), {})),  # another interpreter's
    marshal.dumps((kept_code._HEADER, {("exec", "def f(): pass"): "a str, not code"})),
    marshal.dumps((kept_code._HEADER, {("exec", "x"): compile("x", "/etc/evil.py", "exec")})),  # not generated code
    marshal.dumps((kept_code._HEADER, {("re", "x", 0): (32, "not a list", 0, {}, (None,))})),
], ids=["garbage", "shape", "other-python", "not-code", "other-file", "bad-pattern-entry"])
def test_a_file_not_as_we_wrote_it_is_ignored_and_replaced(tmp_path, content):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / kept_code.cache_file().name).write_bytes(content)
    got = start(cache)
    assert {k: got[k] for k in SAME} == SAME
    assert got["compiled"] and got["kept"] >= 8  # compiled as usual, and written whole for the next start
    assert not start(cache)["compiled"]


@applies
@pytest.mark.parametrize("bad_op", [99999, "x"], ids=["bad-opcode", "not-an-int"])
def test_pattern_code_the_engine_refuses_is_compiled_as_usual(tmp_path, bad_op):
    """A kept pattern whose code _sre does not accept (a file damaged in place, well formed): that pattern is
    compiled by re as usual and works; the file is written again with its right code."""
    cache = tmp_path / "cache"
    start(cache)
    path = cache / kept_code.cache_file().name
    header, entries = marshal.loads(path.read_bytes())
    damaged = [key for key in entries if key[0] == "re" and "name" in str(key[1])]
    assert damaged
    for key in damaged:
        flags, code, groups, groupindex, indexgroup = entries[key]
        entries[key] = (flags, [bad_op] * len(code), groups, groupindex, indexgroup)
    path.write_bytes(marshal.dumps((header, entries)))
    got = start(cache)
    assert {k: got[k] for k in SAME} == SAME and got["compiled"]
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


@applies
def test_a_full_file_keeps_this_starts_code(tmp_path, monkeypatch):
    """Past MAX_ENTRIES, what other starts kept drops out and what this start used is written."""
    cache = tmp_path / "cache"
    cache.mkdir()
    filler = {("exec", f"x{i} = {i}"): compile(f"x{i} = {i}", "<string>", "exec") for i in range(kept_code.MAX_ENTRIES - 1)}
    (cache / kept_code.cache_file().name).write_bytes(marshal.dumps((kept_code._HEADER, filler)))
    first = start(cache)  # the file is read; this start's new code takes it past MAX_ENTRIES
    assert first["compiled"] and first["kept"] > kept_code.MAX_ENTRIES
    header, entries = marshal.loads((cache / kept_code.cache_file().name).read_bytes())
    assert not any(isinstance(key[1], str) and key[1].startswith("x") for key in entries) and len(entries) >= 8
    assert not start(cache)["compiled"]
