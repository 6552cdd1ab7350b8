"""Normalise recorded bundles into test fixtures: temp paths, the checkout path and uuids replaced by
stable placeholders, consistently in every text file (so loc() paths still match kernel paths).

    python scripts/normalise_bundles.py IN_DIR OUT_DIR
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BINARY = {".cubin", ".gz"}
_UUID = re.compile(r"[0-9a-f]{8}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{12}")
_WORK = re.compile(r"/tmp/kernelscope-work-[A-Za-z0-9_-]+")  # -p<PID>-XXXX: the owner pid


def normalise_text(text: str) -> str:
    text = _WORK.sub("/tmp/kernelscope-work", text)
    text = text.replace(str(REPO) + "/", "/repo/")
    return _UUID.sub("00000000_0000_0000_0000_000000000000", text)


def normalise(src: Path, dest: Path) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(src, dest)
    for path in dest.rglob("*"):
        if path.is_file() and path.suffix not in BINARY:
            try:
                text = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue
            new = normalise_text(text)
            if new != text:
                path.write_text(new, encoding="utf-8")
    manifest = dest / "bundle.json"
    data = json.loads(manifest.read_text(encoding="utf-8"))
    data.setdefault("notes", []).append("recorded on a GPU box; temp and checkout paths normalised for tests")
    manifest.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def main() -> int:
    src, dest = Path(sys.argv[1]), Path(sys.argv[2])
    dest.mkdir(parents=True, exist_ok=True)
    for bundle in sorted(p for p in src.iterdir() if (p / "bundle.json").is_file()):
        normalise(bundle, dest / bundle.name)
        print(f"normalised {bundle.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
