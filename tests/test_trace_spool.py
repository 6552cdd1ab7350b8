"""The streaming pass of `kernelscope open` reads a TORCH_TRACE log a chunk at a time and finds its record
lines and runs of payload lines (ingest/stream.py _runs): the same records, payloads and byte offsets as
reading it line by line with a length limit (what it did before), over chunk boundaries anywhere, with
over-long lines left out whole, empty lines ending a payload, and a last line without its newline."""

from __future__ import annotations

import io
import random

import pytest

from kernelscope.ingest import stream


def line_by_line(data: bytes, limit: int) -> list[tuple[int | None, bytes]]:
    """The reference: readline(limit + 1), an over-long line skipped to its newline, tab lines a payload run."""
    out: list[tuple[int | None, bytes]] = []
    run, fh = b"", io.BytesIO(data)
    while True:
        start = fh.tell()
        line = fh.readline(limit + 1)
        if not line:
            break
        if len(line) > limit and not line.endswith(b"\n"):
            while (chunk := fh.readline(1 << 20)) and not chunk.endswith(b"\n"):
                pass
            continue
        if line[:1] == b"\t":
            run += line
            continue
        if run:
            out.append((None, run))
            run = b""
        out.append((start, line))
    if run:
        out.append((None, run))
    return out


def joined(items) -> list[tuple[int | None, bytes]]:
    """Consecutive payload runs as one (a chunk boundary may cut a run in two; both go to the same spool)."""
    out: list[tuple[int | None, bytes]] = []
    for offset, data in items:
        if offset is None and out and out[-1][0] is None:
            out[-1] = (None, out[-1][1] + data)
        else:
            out.append((offset, data))
    return out


def random_log(rng: random.Random) -> bytes:
    lines = []
    for _ in range(rng.randint(0, 30)):
        body = bytes(rng.choice(b'ab {}"') for _ in range(rng.choice([0, 1, 5, 19, 20, 21, 40])))
        tab = b"\t" if rng.random() < 0.6 else b""
        lines.append(tab + body + (b"\n" if rng.random() < 0.95 else b""))
    return b"".join(lines)


@pytest.mark.parametrize("seed", range(4))
def test_chunked_reading_finds_what_reading_line_by_line_finds(monkeypatch, seed):
    rng = random.Random(seed)
    for _ in range(500):
        data, limit = random_log(rng), rng.choice([8, 20, 64])
        monkeypatch.setattr(stream, "_CHUNK", rng.choice([1, 3, 7, 16, 64, 1 << 20]))
        assert joined(stream._runs(io.BytesIO(data), limit)) == joined(line_by_line(data, limit)), (data, limit)


def test_a_trace_record_and_its_payload_and_the_triton_kernels_it_defines(monkeypatch):
    monkeypatch.setattr(stream, "_CHUNK", 5)  # every line cut across chunks
    log = (b'V1201 0 a.py:1] {"inductor_output_code": {}, "frame_id": 0}\n'
           b"\ttriton_poi_fused_add_0 = async_compile.triton('triton_poi_fused_add_0', '''\n"
           b"\tdef f(): pass\n"
           b"\t''')\n"
           b"\n"
           b"\tnot a payload: after an empty line\n"
           b'V1201 0 a.py:2] {"dynamo_start": {}, "frame_id": 1}')
    runs = list(stream._runs(io.BytesIO(log), 1 << 20))
    records = [(offset, data[:9]) for offset, data in runs if offset is not None]
    assert records == [(0, b"V1201 0 a"), (log.index(b"\n\n") + 1, b"\n"), (log.rindex(b"V1201"), b"V1201 0 a")]
    payload = b"".join(data for offset, data in runs if offset is None)
    names: set[bytes] = set()
    stream._triton_names(payload, names)
    assert names == {b"triton_poi_fused_add_0"}


def test_a_full_disk_while_spooling_is_one_line_naming_the_bundle_and_what_to_do(tmp_path, monkeypatch):
    """`open` spools each frame's records beside the bundle: a full disk there is said as one, not as
    `[Errno 28] No space left on device`, and nothing is left at -o."""
    import errno

    import pytest

    from kernelscope.bundle.model import BundleError
    from kernelscope.ingest import open_trace

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "spool"))

    monkeypatch.setattr(open_trace, "spool_trace", full)
    log = tmp_path / "trace.log"
    log.write_text("")
    with pytest.raises(BundleError) as err:
        open_trace.bundle_from_trace(log, tmp_path / "b")
    assert str(err.value) == (f"cannot write the bundle at {tmp_path / 'b'} (no space left on the device); "
                              "free some space or choose another -o")
    assert not (tmp_path / "b").exists() and not any(p.name.startswith(".") for p in tmp_path.iterdir())
