import pytest
import torch


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """The unit tests use tiny models: one thread is faster than two, and immune to a busy
    machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
