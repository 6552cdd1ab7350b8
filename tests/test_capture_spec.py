"""The capture contract: a CaptureSpec survives its JSON round trip, and a malformed one is one line."""

from __future__ import annotations

import argparse

import pytest

from kernelscope.capture.spec import (
    CaptureOptions,
    CaptureSpec,
    SpecError,
    add_capture_arguments,
    spec_from_args,
)
from kernelscope.target import resolve_target


def test_round_trip_keeps_every_call_and_option():
    spec = CaptureSpec.build(resolve_target("add_relu"), "f32[8]; f32[16] grad",
                             CaptureOptions(mode="reduce-overhead", dynamic=False, device="cpu", timeout=30.0,
                                            inference_mode=True, preview=None))
    back = CaptureSpec.from_json(spec.to_json())
    assert back == spec
    assert [c[0]["shape"] for c in back.calls] == [[8], [16]]
    assert back.calls[1][0]["requires_grad"] is True
    assert back.target["name"] == "add_relu"


@pytest.mark.parametrize("path, value, where", [
    (("options", "fullgraph"), "yes", "options.fullgraph"),
    (("options", "mode"), "fastest", "options.mode"),
    (("options", "preview"), "sm_42", "options.preview"),
    (("target", "first_line"), "6", "target.first_line"),
    (("calls",), [["f32[8]"]], "calls"),
])
def test_a_field_of_the_wrong_type_is_named(path, value, where):
    data = CaptureSpec.build(resolve_target("add_relu")).to_dict()
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(SpecError, match=where.replace(".", r"\.")):
        CaptureSpec.from_dict(data)


def _args(*argv):
    p = argparse.ArgumentParser()
    p.add_argument("what")
    add_capture_arguments(p)
    return p.parse_args(["x", *argv])


def test_flags_become_one_spec_and_contradictions_are_one_line():
    spec = spec_from_args(_args("--args", "f32[4, 8]", "--no-grad", "--mode", "max-autotune"), resolve_target("add_relu"))
    assert spec.options.no_grad and spec.options.mode == "max-autotune" and spec.calls[0][0]["shape"] == [4, 8]
    with pytest.raises(SpecError, match="--backward needs grad"):
        spec_from_args(_args("--backward", "--inference-mode"), resolve_target("add_relu"))
    with pytest.raises(SpecError, match="max-autotune cannot be previewed"):
        spec_from_args(_args("--preview", "sm_90", "--mode", "max-autotune"), resolve_target("add_relu"))
