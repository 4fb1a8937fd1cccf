"""In-place collectives and autograd (issue 26, item 13): every in-place collective of
cohort.torch marks its tensor modified, as torch's own in-place ops do, so backward() refuses a
tensor it saved that the collective overwrote (it used to compute a gradient from the new values
without a word); and it refuses a leaf that requires grad while grad mode is on, in torch's words.
Run on every rank under cohortrun (-np 2 and -np 3).
"""

import pytest
import torch

import cohort.torch as hvd

LEAF = "a leaf Variable that requires grad is being used in an in-place operation"
VIEW_OF_LEAF = "a view of a leaf Variable that requires grad is being used in an in-place operation"
MODIFIED = "modified by an inplace operation"


@pytest.fixture(autouse=True, scope="module")
def world():
    hvd.init()
    yield


def sync(fn):
    """An async in-place call made synchronous: the tensor is written once the handle completes."""
    return lambda t: hvd.synchronize(fn(t))


# Every in-place collective of the package, on one tensor.
IN_PLACE = {
    "allreduce_": lambda t: hvd.allreduce_(t, op=hvd.Sum),
    "allreduce_async_": sync(lambda t: hvd.allreduce_async_(t, op=hvd.Sum)),
    "grouped_allreduce_": lambda t: hvd.grouped_allreduce_([t], op=hvd.Sum),
    "grouped_allreduce_async_": sync(lambda t: hvd.grouped_allreduce_async_([t], op=hvd.Sum)),
    "broadcast_": lambda t: hvd.broadcast_(t, 0),
    "broadcast_async_": sync(lambda t: hvd.broadcast_async_(t, 0)),
}


def test_every_in_place_collective_of_the_package_is_covered():
    names = {n for n in dir(hvd) if n.endswith("_") and not n.startswith("_")
             and callable(getattr(hvd, n))}
    assert names == set(IN_PLACE), names


def issue_case():
    """The issue's case: z = y * x with y = 2x, at x = 1; dz/dx = y + 2x = 4 (y and x are saved)."""
    x = torch.tensor([1.0], requires_grad=True)
    y = x * 2.0
    return x, y, (y * x).sum()


def test_the_true_gradient_is_4():
    x, _, z = issue_case()
    z.backward()
    assert x.grad.item() == 4.0


@pytest.mark.parametrize("name", sorted(IN_PLACE))
def test_a_saved_tensor_overwritten_by_the_collective_fails_backward(name):
    x = torch.tensor([1.0], requires_grad=True)
    y = x * 2.0          # y = 2, saved by the product below
    z = y * y            # dz/dx = 2y * 2 = 8
    # Rank 0's y is 2 on every rank; a sum makes it 2 * size, a broadcast of root 0 rewrites it.
    IN_PLACE[name](y)
    with pytest.raises(RuntimeError, match=MODIFIED):
        z.backward()     # used to give the gradient from the overwritten y, silently


def test_the_issue_case_raises_instead_of_giving_6():
    x, y, z = issue_case()
    hvd.allreduce_(y, op=hvd.Sum)  # y = 2 * size: the old gradient was y + 2 = 6 at -np 2
    with pytest.raises(RuntimeError, match=MODIFIED):
        z.backward()
    assert x.grad is None


@pytest.mark.parametrize("name", sorted(IN_PLACE))
def test_a_leaf_that_requires_grad_is_refused(name):
    w = torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=LEAF):
        IN_PLACE[name](w)
    assert torch.equal(w.detach(), torch.ones(3)), "a refused call changed the tensor"
    assert w._version == 0


@pytest.mark.parametrize("name", sorted(IN_PLACE))
def test_a_view_of_such_a_leaf_is_refused(name):
    w = torch.ones(4, requires_grad=True)
    with pytest.raises(RuntimeError, match=VIEW_OF_LEAF):
        IN_PLACE[name](w[:2])


@pytest.mark.parametrize("name", sorted(IN_PLACE))
def test_under_no_grad_a_leaf_is_written_and_its_version_bumped(name):
    w = torch.full((3,), float(hvd.rank() + 1), requires_grad=True)
    before = w._version
    with torch.no_grad():
        IN_PLACE[name](w)
    assert w._version > before
    want = hvd.size() * (hvd.size() + 1) / 2 if "allreduce" in name else 1.0
    assert torch.equal(w.detach(), torch.full((3,), float(want)))


def test_torch_refuses_the_same_as_its_own_in_place_ops():
    w = torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=LEAF):
        w.add_(1)


def test_broadcast_parameters_still_writes_parameters():
    model = torch.nn.Linear(2, 2)
    with torch.no_grad():
        for p in model.parameters():
            p.fill_(float(hvd.rank()))
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    for p in model.parameters():
        assert torch.equal(p.detach(), torch.zeros_like(p))
