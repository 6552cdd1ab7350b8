"""show --lines keeps its columns aligned whatever the snippet: a long line of code ends at a word with …
(it was cut mid-token past its column and pushed the times right), a 100% share is as wide as 5%."""

from __future__ import annotations

from types import SimpleNamespace

from kernelscope.report import lines
from kernelscope.report.lines import LineTable, LineTime


def test_the_time_columns_line_up_under_long_snippets_and_a_whole_share(monkeypatch):
    long_code = "hidden_states = self.post_attention_layernorm(hidden_states + residual_connection)"
    rows = [LineTime("/p/model.py", 12, long_code, exclusive_us=250.0, shared_us=0.0,
                     kernels=[{"name": "triton_per_fused_add_native_layer_norm_mean_pow_rsqrt_0", "us": 250.0,
                               "shared": False}]),
            LineTime("/p/model.py", 7, "x = a + b", exclusive_us=2.5, shared_us=1.0,
                     kernels=[{"name": "triton_poi_fused_add_0", "us": 2.5, "shared": False}])]
    table = LineTable("user", rows, exclusive_us=252.5, total_us=252.5)
    monkeypatch.setattr(lines, "line_tables", lambda b: ([table, LineTable("library")],
                                                          {"total_us": 250.0, "source": "bench", "device": "cuda"}))
    text = lines.lines_text(SimpleNamespace(extra={}))
    out = text.splitlines()
    header = next(i for i, line in enumerate(out) if line.startswith("your lines"))
    first, second = out[header + 1], out[header + 2]
    assert first.startswith("  model.py:12  hidden_states = self.…   "), first
    assert "…" in first[:44] and first[44] == " ", first  # ends at a word, inside its column
    assert "100.0%" in first and " 1.0%" in second
    # the times and shares start in the same columns on every row, under their headings
    for word in ("µs", "%"):
        assert [m for m in range(len(first)) if first.startswith(word, m)] == \
               [m for m in range(len(second)) if second.startswith(word, m)], (first, second)
    assert out[header].index("shared") + len("shared") == first.index("%", first.index("%") + 1) + 1
    hottest = out[out.index("hottest line model.py:12: its launches") + 1]
    assert hottest.split()[:2] == ["triton_per_fused_add_…_norm_mean_pow_rsqrt_0", "250.0"], hottest
