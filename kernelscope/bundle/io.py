"""Reading and writing bundle folders, atomically.

``write_bundle`` writes into a fresh temporary sibling folder and renames it into place, so a
reader never sees half a bundle. ``read_bundle`` validates the manifest and fails with one line
that says what is wrong.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path

from kernelscope.bundle.kernel_file import KERNEL_FILE
from kernelscope.bundle.model import SCHEMA_NAME, SCHEMA_VERSION, Bundle, BundleError, to_dict
from kernelscope.bundle.paths import _mode_inside, _named, _one_line, check_paths, inside, strip_controls  # noqa: F401
from kernelscope.bundle.sections import CHECKED, keep_if_sound
from kernelscope.bundle.validate import from_dict
from kernelscope.safefile import FileProblem, check_regular, open_regular, read_regular, why, writable_folder
from kernelscope.textsafe import printable

MANIFEST = "bundle.json"
TMP_PREFIX = ".kernelscope-tmp-"


def read_bundle(path: str | os.PathLike) -> Bundle:
    root = Path(path)
    if not root.exists():
        raise BundleError(f"{root}: no such bundle folder; capture one with `kernelscope capture TARGET -o {root}`")
    if root.is_file() and root.name == MANIFEST:
        root = root.parent
    manifest = root / MANIFEST
    if not manifest.exists() and root.is_dir():  # a replace killed half way: put the old bundle back first
        sweep_orphans(root.absolute().parent, TMP_PREFIX + "old-")
    if not manifest.is_file():
        if manifest.exists():  # a FIFO or a device named bundle.json
            try:
                check_regular(manifest)
            except FileProblem as exc:
                raise BundleError(f"{exc}; not a kernelscope bundle") from exc
        raise BundleError(f"{root}: not a kernelscope bundle (no {MANIFEST}); capture one with `kernelscope capture`")
    try:
        size = manifest.stat().st_size
        if size > MAX_MANIFEST_BYTES:
            raise BundleError(f"{manifest}: bundle manifest of {size >> 20} MB is larger than kernelscope reads "
                              f"({MAX_MANIFEST_BYTES >> 20} MB); capture again")
        raw = read_regular(manifest, MAX_MANIFEST_BYTES, "bundle manifest")
        data = json.loads(raw.decode("utf-8"))
    except FileProblem as exc:
        raise BundleError(f"{exc}; capture again") from exc
    except (OSError, ValueError) as exc:
        raise BundleError(f"{manifest}: unreadable bundle manifest ({_one_line(exc)}); capture again") from exc
    except RecursionError as exc:
        raise BundleError(f"{manifest}: bundle manifest nested too deeply to be a kernelscope bundle") from exc
    if not isinstance(data, dict) or data.get("schema") != SCHEMA_NAME:
        raise BundleError(f"{manifest}: not a kernelscope bundle manifest")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise BundleError(f"{manifest}: bundle format version {version!r} is not a positive whole number; "
                          "the manifest is damaged, capture again")
    if version > SCHEMA_VERSION:
        raise BundleError(
            f"{root}: bundle format version {version} is newer than this kernelscope reads "
            f"({SCHEMA_VERSION}); upgrade kernelscope"
        )
    strip_controls(data, raw)
    try:
        if version >= 2:
            from kernelscope.bundle.shards import from_index

            bundle = from_index(data, str(root))
        else:
            bundle = from_dict(data)
    except BundleError as exc:
        raise BundleError(f"{manifest}: {exc}; the manifest is damaged, capture again") from exc
    bundle.root = str(root)
    if isinstance(bundle.extra, dict):  # a damaged section is left out, as if the bundle never had it
        for section in CHECKED:
            if not keep_if_sound(bundle, section, bundle.extra.get(section), MANIFEST):
                bundle.extra.pop(section, None)
    check_paths(bundle, referenced_paths(bundle))
    return bundle


MAX_MANIFEST_BYTES = 256 << 20


def referenced_paths(bundle: Bundle) -> list[str]:
    """Every bundle-relative path the manifest names (texts, logs, Triton stages, the source copy). A
    format-2 graph's own files and its kernels' (sources, Triton stages) are checked when its detail
    file is read (bundle/shards.py), so a job's first frame checks what it shows, not every graph's
    files; every reader goes through ``inside`` and ``open_regular`` as well."""
    paths: list[str] = []
    if bundle.source.get("path"):
        paths.append(bundle.source["path"])
    paths += [p for p in bundle.files.values() if p]
    lazy = {g.id for g in bundle.graphs if g.__dict__.get("_detail_path") and not g.detail_loaded}
    for g in bundle.graphs:
        if g.id not in lazy:
            paths += [p for p in g.files.values() if p]
    for k in bundle.kernels if bundle.kernels_read else ():  # format 5: each graph's checks its own
        if k.graph in lazy:
            continue
        if k.source:
            paths.append(k.source)
        if k.detail_loaded:
            for v in k.triton:
                paths += [p for p in v.files.values() if p]
    return paths


def read_text(bundle: Bundle, relpath: str | None, *, required: bool = False) -> str:
    """The text of a file in the bundle ('' when absent, or a BundleError when ``required``); at most
    MAX_TEXT_BYTES of it, with a note of what was cut. A path outside the bundle is a BundleError."""
    if not relpath:
        if required:
            raise BundleError(f"{bundle.root}: the manifest names no file for this")
        return ""
    path = inside(bundle.root, relpath)
    try:
        with open_regular(path) as fh:  # a FIFO planted in a bundle would block the reader forever
            data = fh.read(MAX_TEXT_BYTES + 1)
            rest = fh.seek(0, os.SEEK_END) - MAX_TEXT_BYTES if len(data) > MAX_TEXT_BYTES else 0
    except FileProblem as exc:
        if exc.not_regular:
            raise BundleError(f"{bundle.root}: {relpath} in the bundle is not a regular file; refusing to read it") from exc
        if required:
            raise BundleError(f"{bundle.root}: cannot read {relpath} ({why(exc.__cause__ or exc)}); "
                              "the bundle is incomplete, capture again") from exc
        return ""
    except OSError as exc:
        if required:
            raise BundleError(f"{bundle.root}: cannot read {relpath} ({exc.strerror or _one_line(exc)}); "
                              "the bundle is incomplete, capture again") from exc
        return ""
    # Escape sequences and control bytes in a bundle's file never reach a terminal, a report or a diff.
    if rest > 0:
        text = printable(data[:MAX_TEXT_BYTES].decode("utf-8", errors="replace"))
        return text + f"\n… ({rest} bytes cut: kernelscope reads the first {MAX_TEXT_BYTES >> 20} MB of a file)\n"
    return printable(data.decode("utf-8", errors="replace"))


MAX_TEXT_BYTES = 16 << 20

MAX_LINE_CHARS = 4000  # a line shown in a view or a report is cut here
MAX_SHOWN_CHARS = 2 << 20  # a text shown in a view or embedded in a report is cut here


def clip_text(text: str, max_line: int = MAX_LINE_CHARS, max_chars: int = MAX_SHOWN_CHARS) -> str:
    """``text`` for showing: each line longer than ``max_line`` cut with a note of how much, and the
    whole cut after ``max_chars`` with a note. Linear in the length of ``text``; unchanged when small."""
    if len(text) <= max_line:
        return text
    cut_total = 0
    if len(text) > max_chars:
        cut_total = len(text) - max_chars
        text = text[:max_chars]
    if any(len(line) > max_line for line in text.split("\n")):
        text = "\n".join(line if len(line) <= max_line else f"{line[:max_line]}… ({len(line) - max_line} chars cut)"
                         for line in text.split("\n"))
    if cut_total:
        text += f"\n… ({cut_total} more chars cut: too long to show)\n"
    return text


def bundle_path(bundle: Bundle, relpath: str) -> Path:
    """``bundle.root/relpath``, refused when it leads outside the bundle (see ``inside``)."""
    return inside(bundle.root, relpath)


def manifest_text(bundle: Bundle) -> str:
    """The whole bundle as one JSON text (format 1's shape: every detail inline), for ``show --json``."""
    from kernelscope.bundle.side_sections import load_sides

    load_sides(bundle)
    return json.dumps(to_dict(bundle), indent=1, sort_keys=False) + "\n"


def save_manifest(bundle: Bundle, folder: str | os.PathLike) -> None:
    """Write bundle.json (the index) and each graph's detail file into ``folder`` (which already holds
    the bundle's files); detail files of ``folder``'s own bundle that were never read stay as they are."""
    from kernelscope.bundle.shards import write

    target = Path(folder) / MANIFEST
    tmp = target.with_suffix(".json.tmp")
    try:
        tmp.write_text(write(bundle, folder), encoding="utf-8")
        os.replace(tmp, target)
    except OSError as exc:  # a full disk or a read-only folder: one line, and no bundle.json.tmp left
        try:
            tmp.unlink()
        except OSError:
            pass
        raise BundleError(f"cannot write {target} ({why(exc)}); the bundle was left as it was") from exc


def refuse_own_file(out: Path, root: Path, writing: str, hint: str = "") -> None:
    """BundleError where ``out`` is the bundle's manifest or kernel index (a report or trace written over it
    would lose the bundle)."""
    for own, what in ((MANIFEST, "manifest"), (KERNEL_FILE, "kernel index")):
        if out.resolve() == (root / own).resolve():
            raise BundleError(f"{out} is the bundle's own {what}; refusing to write {writing} over it{hint}")


def fresh_path(folder: str | os.PathLike, name: str, suffix: str = "") -> Path:
    """A not yet existing ``folder/NAME-YYYYmmdd-HHMMSS[-n]SUFFIX``: new captures never overwrite old ones."""
    import time

    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = Path(folder) / f"{name}-{stamp}{suffix}"
    n = 1
    while out.exists():
        n += 1
        out = Path(folder) / f"{name}-{stamp}-{n}{suffix}"
    return out


# The top-level entries a bundle folder holds (collect.py, ingest/build.py, save_manifest): what
# --force removes from an existing bundle before the new one moves in; nothing else is touched.
BUNDLE_ENTRIES = (MANIFEST, KERNEL_FILE, "graphs", "kernels", "triton", "logs", "source", "sections", MANIFEST + ".tmp")


def is_bundle_folder(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a folder whose bundle.json is a kernelscope manifest (its ``schema``)."""
    manifest = Path(path) / MANIFEST
    try:
        data = json.loads(read_regular(manifest, MAX_MANIFEST_BYTES).decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return False
    return isinstance(data, dict) and data.get("schema") == SCHEMA_NAME


def _precious(out: Path) -> str | None:
    """What ``out`` is when a bundle must never be written over it (the cwd, home, /, a parent of cwd)."""
    try:
        resolved = out.resolve()
        cwd = Path.cwd().resolve()
    except OSError:
        return None
    if resolved == cwd:
        return "the current folder"
    if resolved.parent == resolved:
        return "the root folder"
    if resolved == Path.home().resolve():
        return "your home folder"
    if cwd.is_relative_to(resolved):
        return "a parent of the current folder"
    return None


def check_out(out: str | os.PathLike, *, replace: bool) -> None:
    """BundleError unless a bundle may be written to ``out``: a new path, or (with ``replace``) a
    folder that holds a kernelscope bundle. Never the current folder, home, / or a parent of cwd."""
    out = Path(out)
    what = _precious(out)
    if what:
        raise BundleError(f"{out} is {what}; -o names the bundle's own folder: choose a new one, "
                          "e.g. -o kernelscope-captures/NAME")
    if replace:  # a replace killed half way is undone first, so --force finds the old bundle whole
        sweep_orphans(out.absolute().parent, TMP_PREFIX + "old-")
    try:
        exists = out.exists() or out.is_symlink()
    except OSError as exc:  # a name too long, a loop of links
        raise BundleError(f"{out}: cannot write a bundle there ({exc.strerror or exc}); choose another -o") from exc
    if not exists:
        problem = writable_folder(out.parent if str(out.parent) else ".")
        if problem:  # said now, not after a compile of half a minute
            raise BundleError(f"{problem}; choose another -o")
        return
    if not replace:
        raise BundleError(f"{out} already exists; choose another -o or pass --force to replace it")
    if not out.is_dir():
        raise BundleError(f"{out} exists and is not a folder; refusing to replace it (choose another -o)")
    if not is_bundle_folder(out):
        raise BundleError(f"{out} exists and is not a kernelscope bundle; refusing to replace it "
                          f"(no {MANIFEST} with kernelscope's schema there); choose another -o")
    problem = writable_folder(out.parent) or writable_folder(out)
    if problem:
        raise BundleError(f"{problem}; cannot replace {out}, choose another -o")


def owned_name(prefix: str) -> str:
    """A temporary folder's name prefix that records its owner (``PREFIX-p<PID>-``), so a later
    start can remove folders whose owner died (``sweep_orphans``)."""
    return f"{prefix}p{os.getpid()}-"


_OWNER = re.compile(r"-p(\d+)-[A-Za-z0-9_]+$")  # mkdtemp's random tail has no '-'


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # someone else's process: alive as far as we can tell
    return True


def sweep_orphans(folder: str | os.PathLike, prefix: str) -> list[Path]:
    """Remove ``folder/PREFIX*-p<PID>-*`` folders of this user whose owner process is dead (left by
    a killed parent). Folders without a recorded owner, or whose owner lives, are left alone."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    uid = os.getuid() if hasattr(os, "getuid") else None
    for entry in entries:
        match = _OWNER.search(entry.name)
        if not entry.name.startswith(prefix) or not match or int(match.group(1)) == os.getpid():
            continue
        try:
            if not entry.is_dir(follow_symlinks=False) or (uid is not None and entry.stat().st_uid != uid):
                continue
        except OSError:
            continue
        if pid_alive(int(match.group(1))):
            continue
        if entry.name.startswith(TMP_PREFIX + "old-") and not restore_replaced(Path(entry.path)):
            continue  # the old bundle could not be put back: keep its pieces rather than lose them
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(Path(entry.path))
    return removed


def make_staging_dir(out: str | os.PathLike) -> Path:
    """A fresh hidden folder next to ``out`` (same file system, so the final rename is atomic); its
    name records this process, and staging folders of dead processes there are removed first."""
    out = Path(out).absolute()
    if out.is_file():
        raise BundleError(f"{out} is a file; -o names the folder to write the bundle into")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        sweep_orphans(out.parent, TMP_PREFIX)
        return Path(tempfile.mkdtemp(prefix=owned_name(TMP_PREFIX + out.name + "-"), dir=out.parent))
    except OSError as exc:
        raise BundleError(f"cannot write a bundle at {out} ({exc.strerror or _one_line(exc)}); "
                          "choose another -o") from exc


def commit_staging_dir(staging: str | os.PathLike, out: str | os.PathLike, *, replace: bool = False) -> None:
    """Move a finished staging folder to ``out``. An existing ``out`` is only replaced when asked,
    only when it holds a kernelscope bundle, and then only the bundle's own entries are replaced:
    the user's other files in that folder stay."""
    staging, out = Path(staging), Path(out)
    check_out(out, replace=replace)
    if not out.exists():
        try:
            os.replace(staging, out)
        except OSError as exc:
            raise BundleError(f"cannot write the bundle to {out} ({exc.strerror or _one_line(exc)}); "
                              "choose another -o") from exc
        return
    new = sorted(staging.iterdir(), key=lambda p: p.name == MANIFEST)  # the manifest last
    clash = [p.name for p in new if p.name not in BUNDLE_ENTRIES and (out / p.name).exists()]
    if clash:
        raise BundleError(f"{out}: the new bundle would overwrite {', '.join(clash)}, which is not the old "
                          "bundle's; choose another -o")
    old = None
    try:
        old = Path(tempfile.mkdtemp(prefix=owned_name(f"{TMP_PREFIX}old-{out.name}-"), dir=out.parent))
        # Where these pieces belong, written before any move: a start after a kill mid-replace reads it
        # and puts the old bundle back (restore_replaced) unless the new one is whole.
        (old / REPLACE_NOTE).write_text(out.name, encoding="utf-8")
    except OSError as exc:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        raise BundleError(f"{out}: cannot replace the bundle ({why(exc)}); it was left as it was") from exc
    moved_out: list[str] = []
    moved_in: list[str] = []
    try:
        for name in BUNDLE_ENTRIES:  # the manifest first: a reader never sees it over missing files
            if (out / name).exists() or (out / name).is_symlink():
                os.replace(out / name, old / name)
                moved_out.append(name)
        for path in new:
            os.replace(path, out / path.name)
            moved_in.append(path.name)
    except OSError as exc:  # put the old bundle back as it was
        for name in moved_in:
            os.replace(out / name, staging / name)
        for name in moved_out:
            os.replace(old / name, out / name)
        shutil.rmtree(old, ignore_errors=True)
        raise BundleError(f"{out}: cannot replace the bundle ({why(exc)}); it was left as it was") from exc
    shutil.rmtree(old, ignore_errors=True)
    shutil.rmtree(staging, ignore_errors=True)


REPLACE_NOTE = ".kernelscope-replacing"  # in an old-bundle folder: the name of the bundle it came from


def restore_replaced(old: Path) -> bool:
    """Finish or undo a replace whose process died (``old`` is its ``.kernelscope-tmp-old-*`` folder):
    when the bundle it names holds no manifest, the new bundle never fully moved in, so its partial
    entries go and the old ones move back, the manifest last. True when ``old`` may now be removed."""
    try:
        name = (old / REPLACE_NOTE).read_text(encoding="utf-8").strip()
    except OSError:
        return not any(e.name in BUNDLE_ENTRIES for e in os.scandir(old))
    if not name or "/" in name or name in (".", ".."):
        return False
    out = old.parent / name
    if (out / MANIFEST).exists():
        return True  # the new bundle is whole (its manifest moves in last): the old pieces are garbage
    pieces = sorted((e.name for e in os.scandir(old) if e.name in BUNDLE_ENTRIES), key=lambda n: n == MANIFEST)
    try:
        out.mkdir(exist_ok=True)
        for piece in pieces:
            if (out / piece).exists() or (out / piece).is_symlink():  # half of the new bundle
                target = out / piece
                shutil.rmtree(target) if target.is_dir() and not target.is_symlink() else target.unlink()
            os.replace(old / piece, out / piece)
    except OSError:
        return False
    return True
