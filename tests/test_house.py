"""The house as a newcomer to the code meets it: files a reader can hold, names that say what a file does
(never a tracker number), and the README's maps (where to change what, the GPU checks) true of the tree."""

from __future__ import annotations

import re

from tests.conftest import REPO

MAX_LINES = 450
# A tracker's name for a file: an issue letter and number (f25, a21, h21p), or a review round (round2).
TRACKER_NAME = re.compile(r"(?:^|_)(?:[a-z]\d{2}[a-z]?|round\d+|sums\d+|issue\d+)(?:_|$)")


def test_every_package_file_fits_what_a_reader_holds():
    long = {str(p.relative_to(REPO)): n for p in (REPO / "kernelscope").rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"over {MAX_LINES} lines (split at a seam): {long}"


def test_no_script_benchmark_or_test_is_named_after_a_tracker_number():
    named = [str(p.relative_to(REPO)) for folder in ("scripts", "benchmarks", "tests")
             for p in (REPO / folder).rglob("*") if p.suffix in (".py", ".sh") and TRACKER_NAME.search(p.stem)]
    assert not named, named
    assert TRACKER_NAME.search("gpu_check_h21p") and TRACKER_NAME.search("test_hostile_round2")
    assert not TRACKER_NAME.search("test_ui_fits_80_columns") and not TRACKER_NAME.search("llama_bf16")


def test_the_readme_lists_every_gpu_check_and_each_says_what_it_verifies():
    readme = (REPO / "README.md").read_text()
    listed = readme[readme.index("bash scripts/gpu_verify.sh CHECK..."):].split("\n\n", 1)[0]
    for script in sorted((REPO / "scripts" / "gpu_checks").glob("*.sh")):
        assert re.search(rf"(?<![\w-]){re.escape(script.stem)}(?![\w-])", listed), f"{script.stem} not in the README"
        second = script.read_text().splitlines()[1]
        assert second.startswith(f"# {script.stem}: ") and len(second) > len(script.stem) + 12, (script.name, second)


def test_the_readmes_where_to_change_what_names_files_that_exist():
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("Where to change what:"):].split("\n\n", 2)[1]
    named = [p for p in re.findall(r"`([\w/.]+\.py)`", section)]
    assert len(named) >= 10, section
    files = {str(p.relative_to(REPO / "kernelscope")) for p in (REPO / "kernelscope").rglob("*.py")}
    tests = {str(p.relative_to(REPO)) for p in (REPO / "tests").glob("*.py")}
    missing = [p for p in named if p not in files and p not in tests
               and ("/" in p or not any(f.endswith("/" + p) for f in files))]
    assert not missing, missing
