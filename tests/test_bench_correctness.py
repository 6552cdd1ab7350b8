"""bench's correctness check on a function that writes its inputs in place (pure CPU, eager on both
sides, so no compile is needed): each side gets its own copy of the inputs, and what the function
wrote into them is compared too."""

from __future__ import annotations

import torch

from kernelscope.bench.correctness import correctness
from kernelscope.bench.step import Step
from kernelscope.capture.spec import calls_from_text

REQUEST = {"device": "cpu", "args": calls_from_text("f32[256], f32[256]")[0]}


def add_in_place(x, y):
    x.add_(y)
    return torch.relu(x)


def test_a_function_that_writes_its_input_compares_equal_with_itself():
    verdict = correctness(REQUEST, None, Step(add_in_place, False), Step(add_in_place, False))
    assert verdict["ok"], verdict["problems"]
    assert verdict["tensors"] == 2  # the output and the input written in place
    assert "1 input written in place" in verdict["compared"]


def test_a_wrong_in_place_write_is_named():
    def writes_twice(x, y):
        x.add_(y).add_(y)
        return torch.relu(x - y)  # the same output as add_in_place, a different input afterwards

    verdict = correctness(REQUEST, None, Step(add_in_place, False), Step(writes_twice, False))
    assert not verdict["ok"]
    assert len(verdict["problems"]) == 1
    assert verdict["problems"][0].startswith("input 0 as written in place: compiled's rmse vs float64 ")
