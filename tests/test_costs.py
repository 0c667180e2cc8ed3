import pytest
import torch
import torch.nn as nn

from tfs.costs import count_flops, flops_by_operator, matmul_log


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


# --- matmul_log: the products and their longest chain -----------------------------------------


def test_independent_products_form_a_chain_of_one():
    a, b, c = torch.randn(3, 4), torch.randn(4, 5), torch.randn(4, 6)
    log = matmul_log(lambda: (a @ b, a @ c))
    assert log.calls == 2 and log.chain == 1


def test_a_product_of_products_waits_for_them():
    a, b = torch.randn(4, 4), torch.randn(4, 4)
    log = matmul_log(lambda: (a @ b) @ (b @ a).relu() @ a)
    assert log.calls == 4 and log.chain == 3
    assert [depth for _, _, depth in log.products] == [1, 1, 2, 3]


@pytest.mark.parametrize("n", [1, 5, 12])
def test_the_rnn_chain_grows_with_the_length(n):
    rnn = nn.RNN(8, 8, batch_first=True)
    log = matmul_log(lambda x: rnn(x)[0], torch.randn(1, n, 8))
    assert log.calls == n + 1  # the inputs at once, then one product per step
    assert log.chain == n


def test_the_products_record_their_input_shapes():
    log = matmul_log(torch.mm, torch.randn(3, 4), torch.randn(4, 5))
    assert log.products == [("mm", ((3, 4), (4, 5)), 1)]


def test_matmul_log_rejects_what_cannot_run():
    with pytest.raises(TypeError, match="function or module"):
        matmul_log("x @ y")
