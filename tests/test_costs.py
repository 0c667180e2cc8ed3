import pytest
import torch
import torch.nn as nn

from tfs.costs import count_flops, flops_by_operator


def test_linear_layer_costs_two_flops_per_multiply_add():
    layer = nn.Linear(8, 16)
    x = torch.randn(4, 8)
    assert count_flops(layer, x) == 2 * 4 * 8 * 16


def test_batched_product_split_by_operator():
    a, b = torch.randn(2, 3, 5), torch.randn(2, 5, 7)
    assert flops_by_operator(torch.bmm, a, b) == {"bmm": 2 * 2 * 3 * 5 * 7}


def test_elementwise_work_is_not_counted():
    assert count_flops(torch.softmax, torch.randn(4, 4), dim=-1) == 0


@pytest.mark.parametrize("function", [count_flops, flops_by_operator])
def test_rejects_what_cannot_run(function):
    with pytest.raises(TypeError, match="function or module"):
        function(42)
