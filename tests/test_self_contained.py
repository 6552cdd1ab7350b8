"""A fresh clone runs its tests and benchmarks with nothing beside it: no file reads the folder that
sits beside the checkout on a developer's machine (it is not in a user's clone)."""

from __future__ import annotations

import re
from pathlib import Path

from .conftest import REFERENCE, REPO

# The folder beside the checkout by a relative path, by /work's absolute one, or joined as
# `... / NAME` (how the old REFERENCE was built). Built from parts so this file does not match itself.
BESIDE = "sha" + "red"
OUTSIDE = re.compile(r"\.\./" + BESIDE + r"\b|/work/" + BESIDE + r"\b|/\s*[\"']" + BESIDE + r"[\"']")


def offenders(files) -> list[str]:
    found = []
    for path in files:
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").split("\n"), 1):
            if OUTSIDE.search(line):
                found.append(f"{path}:{n}: {line.strip()}")
    return found


def test_no_test_or_benchmark_reads_outside_the_checkout():
    me = Path(__file__).resolve()
    files = [p for folder in ("tests", "benchmarks", "scripts") for p in sorted((REPO / folder).rglob("*"))
             if p.suffix in (".py", ".sh", ".toml", ".cfg", ".ini") and p.resolve() != me
             and "fixtures" not in p.relative_to(REPO).parts and "__snapshots__" not in p.relative_to(REPO).parts]
    files += [REPO / name for name in ("Makefile", "pyproject.toml") if (REPO / name).is_file()]
    assert len(files) > 20  # the walk found the suite
    assert offenders(files) == []


def test_the_pattern_catches_the_old_way(tmp_path):
    old = tmp_path / "old.py"
    old.write_text(f'REFERENCE = REPO.parent / "{BESIDE}" / "reference"\nDATA = "../{BESIDE}/x"\n')
    assert [f.split(":")[1] for f in offenders([old])] == ["1", "2"]


def test_reference_fixtures_are_in_the_checkout():
    assert REFERENCE.is_relative_to(REPO) and (REFERENCE / "add_relu" / "trace").is_dir()
