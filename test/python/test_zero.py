"""cohort.torch.ZeroRedundancyOptimizer under cohortrun (-np 2, 3 and 4): 50 steps of Adam and of
SGD with momentum against DistributedOptimizer on the same data, param groups with their own
hyperparameters, the state split over the ranks, consolidate_state_dict/state_dict/
load_state_dict in the wrapped optimizer's format, TorchState commit/restore, and bad input.

Tolerance: 1e-6 relative (and 1e-7 absolute for parameters near zero). Both reduce in float32; the
reference averages each gradient with an allreduce, the ZeRO optimizer with a reduce-scatter of
the flat gradient, and the two may add the ranks' values in other orders, so the averaged
gradients may differ in the last bit; every optimizer step after that is elementwise and the same.
"""

import pytest
import torch
import torch.nn.functional as F

import cohort.torch as hvd
from cohort_test_device import host_randn

RTOL, ATOL = 1e-6, 1e-7


@pytest.fixture(autouse=True, scope="module")
def world():
    hvd.init()
    yield


def make_model(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 3))


def batch(rank, step):
    g = torch.Generator().manual_seed(1000 * step + rank)
    return host_randn(6, 5, generator=g), host_randn(6, 3, generator=g)


def train(model, optimizer, steps, start=0):
    for step in range(start, start + steps):
        optimizer.zero_grad()
        x, y = batch(hvd.rank(), step)
        F.mse_loss(model(x), y).backward()
        optimizer.step()


OPTIMIZERS = {
    "adam": (torch.optim.Adam, {"lr": 0.01, "weight_decay": 0.01}),
    "sgd_momentum": (torch.optim.SGD, {"lr": 0.05, "momentum": 0.9, "weight_decay": 1e-4}),
}


def assert_models_close(a, b):
    for (name, p), q in zip(a.named_parameters(), b.parameters()):
        torch.testing.assert_close(p, q, rtol=RTOL, atol=ATOL, msg=lambda m: f"{name}: {m}")


@pytest.mark.parametrize("kind", sorted(OPTIMIZERS))
def test_matches_distributed_optimizer_over_50_steps(kind):
    cls, kwargs = OPTIMIZERS[kind]
    model, reference = make_model(), make_model()
    zero = hvd.ZeroRedundancyOptimizer(model.parameters(), cls, **kwargs)
    ref = hvd.DistributedOptimizer(cls(reference.parameters(), **kwargs),
                                   named_parameters=reference.named_parameters())
    train(model, zero, 50)
    train(reference, ref, 50)
    assert_models_close(model, reference)
    # Every rank's parameters are the same (the allgather made them whole).
    for p in model.parameters():
        torch.testing.assert_close(hvd.broadcast(p.detach(), 0, name="zero.same"), p.detach(),
                                   rtol=0, atol=0)


def test_state_is_split_over_the_ranks():
    model = make_model()
    zero = hvd.ZeroRedundancyOptimizer(model.parameters(), torch.optim.Adam, lr=0.01)
    train(model, zero, 1)
    total = sum(p.numel() for p in model.parameters())
    (shard,) = zero.optim.param_groups[0]["params"]
    mine = zero.optim.state[shard]["exp_avg"].numel()
    counts = hvd.allgather_object(mine)
    assert sum(counts) == total
    assert max(counts) - min(counts) <= 1
    assert mine == (total // hvd.size()) + (hvd.rank() < total % hvd.size())


def test_param_groups_keep_their_hyperparameters_and_schedulers_reach_them():
    model, reference = make_model(), make_model()

    def groups(m):
        return [{"params": m[0].parameters(), "lr": 0.02}, {"params": m[2].parameters()}]

    zero = hvd.ZeroRedundancyOptimizer(groups(model), torch.optim.Adam, lr=0.005)
    ref = hvd.DistributedOptimizer(torch.optim.Adam(groups(reference), lr=0.005),
                                   named_parameters=reference.named_parameters())
    assert [g["lr"] for g in zero.param_groups] == [0.02, 0.005]
    assert zero.param_groups[1]["betas"] == (0.9, 0.999)  # the wrapped optimizer's defaults
    train(model, zero, 10)
    train(reference, ref, 10)
    for opt in (zero, ref):
        for group in opt.param_groups:
            group["lr"] *= 0.5
    train(model, zero, 10, start=10)
    train(reference, ref, 10, start=10)
    assert_models_close(model, reference)


def test_consolidated_state_is_the_wrapped_optimizers_format():
    model, reference = make_model(), make_model()
    zero = hvd.ZeroRedundancyOptimizer(model.parameters(), torch.optim.Adam, lr=0.01)
    ref = hvd.DistributedOptimizer(torch.optim.Adam(reference.parameters(), lr=0.01),
                                   named_parameters=reference.named_parameters())
    train(model, zero, 5)
    train(reference, ref, 5)
    with pytest.raises(RuntimeError, match="call consolidate_state_dict"):
        zero.state_dict()
    zero.consolidate_state_dict(to=hvd.size() - 1)
    if hvd.rank() != hvd.size() - 1:
        with pytest.raises(RuntimeError, match=f"rank {hvd.rank()} holds no consolidated state"):
            zero.state_dict()
        return
    mine, theirs = zero.state_dict(), ref.state_dict()
    assert sorted(mine["state"]) == sorted(theirs["state"])
    assert mine["param_groups"][0]["params"] == theirs["param_groups"][0]["params"]
    for i, entry in theirs["state"].items():
        for key, value in entry.items():
            torch.testing.assert_close(torch.as_tensor(mine["state"][i][key]),
                                       torch.as_tensor(value), rtol=RTOL, atol=ATOL)


def test_load_state_dict_continues_where_a_plain_optimizer_left_off():
    model, reference = make_model(), make_model()
    ref = hvd.DistributedOptimizer(torch.optim.Adam(reference.parameters(), lr=0.01),
                                   named_parameters=reference.named_parameters())
    train(reference, ref, 5)
    model.load_state_dict(reference.state_dict())
    zero = hvd.ZeroRedundancyOptimizer(model.parameters(), torch.optim.Adam, lr=0.01)
    zero.load_state_dict(ref.state_dict())
    train(model, zero, 5, start=5)
    train(reference, ref, 5, start=5)
    assert_models_close(model, reference)


def test_load_state_dict_refuses_other_groups_and_changes_nothing():
    model = make_model()
    zero = hvd.ZeroRedundancyOptimizer(model.parameters(), torch.optim.Adam, lr=0.01)
    train(model, zero, 2)
    (shard,) = zero.optim.param_groups[0]["params"]
    before = zero.optim.state[shard]["exp_avg"].clone()
    bad = {"state": {}, "param_groups": [{"lr": 1.0, "params": [0]}]}
    with pytest.raises(ValueError, match="other param groups"):
        zero.load_state_dict(bad)
    short = {"state": {i: {"step": torch.tensor(1.0), "exp_avg": torch.zeros(1),
                           "exp_avg_sq": torch.zeros(1)} for i in range(4)},
             "param_groups": [dict(zero.param_groups[0], params=[0, 1, 2, 3])]}
    with pytest.raises(ValueError, match="elements"):
        zero.load_state_dict(short)
    assert torch.equal(zero.optim.state[shard]["exp_avg"], before)
    assert zero.param_groups[0]["lr"] == 0.01


@pytest.mark.cpu_only(reason="TorchState commits a sharded optimizer state of CPU tensors only")
def test_torch_state_commits_and_restores_the_sharded_state():
    model = make_model()
    zero = hvd.ZeroRedundancyOptimizer(model.parameters(), torch.optim.Adam, lr=0.01)
    state = hvd.elastic.TorchState(model, zero, step=0)
    train(model, zero, 3)
    state.commit()
    (shard,) = zero.optim.param_groups[0]["params"]
    kept = {k: v.clone() for k, v in zero.optim.state[shard].items()}
    params = [p.detach().clone() for p in model.parameters()]
    train(model, zero, 3, start=3)
    state.restore()
    (shard,) = zero.optim.param_groups[0]["params"]
    for key, value in kept.items():
        assert torch.equal(torch.as_tensor(zero.optim.state[shard][key]), torch.as_tensor(value))
    for p, q in zip(model.parameters(), params):
        assert torch.equal(p.detach(), q)
    # The flat parameter the wrapped optimizer steps was read again from the restored model.
    assert torch.equal(shard.detach(), zero._shards[0].read_params())


def test_torch_state_refuses_a_sharded_state_it_cannot_commit():
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU: CUDA parameters")
    model = make_model().cuda()
    zero = hvd.ZeroRedundancyOptimizer(model.parameters(), torch.optim.Adam, lr=0.01)
    with pytest.raises(ValueError, match="over cuda parameters cannot be committed yet"):
        hvd.elastic.TorchState(model, zero)


def test_bad_arguments_are_refused():
    params = list(make_model().parameters())
    with pytest.raises(ValueError, match="process_group must be None"):
        hvd.ZeroRedundancyOptimizer(params, torch.optim.SGD, process_group=object(), lr=0.1)
    with pytest.raises(ValueError, match="overlap_with_ddp"):
        hvd.ZeroRedundancyOptimizer(params, torch.optim.SGD, overlap_with_ddp=True, lr=0.1)
    mixed = [torch.nn.Parameter(torch.zeros(3)), torch.nn.Parameter(torch.zeros(3).double())]
    with pytest.raises(ValueError, match="one dtype and one device"):
        hvd.ZeroRedundancyOptimizer(mixed, torch.optim.SGD, lr=0.1)
    zero = hvd.ZeroRedundancyOptimizer(params, torch.optim.SGD, lr=0.1)
    with pytest.raises(ValueError, match="add_param_group"):
        zero.add_param_group({"params": [torch.nn.Parameter(torch.zeros(2))]})
    with pytest.raises(ValueError, match="rank 99 is not in this world"):
        zero.consolidate_state_dict(to=99)
