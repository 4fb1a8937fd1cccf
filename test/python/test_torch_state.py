"""TorchState's commits copy tensors into snapshot buffers allocated once (issue 27, item 4), under
cohortrun (-np 2 and -np 3): restore gives exactly the committed values, including optimizer state
created after the first commit, parameters replaced by new tensors, tensors whose dtype changed,
tied weights and non-tensor values, and runs the optimizer's load_state_dict hooks (torch >= 2.0);
a commit that fails on one rank keeps the last snapshot; a sync sends rank 0's values; and a
commit neither pickles tensors nor reallocates its buffers.
ElasticSampler.state_dict() costs the same whatever the data set's size.
"""

import pickle
import time

import pytest
import torch
import torch.nn.functional as F

import cohort.torch as hvd
from cohort_test_device import host_randn


@pytest.fixture(autouse=True, scope="module")
def world():
    hvd.init()
    yield


def make_model(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.Tanh(),
                               torch.nn.Linear(8, 2))


def train_step(model, opt, step):
    g = torch.Generator().manual_seed(100 * step + hvd.rank())
    x, y = host_randn(6, 4, generator=g), host_randn(6, 2, generator=g)
    opt.zero_grad()
    F.mse_loss(model(x), y).backward()
    opt.step()


def values(model, opt):
    """Copies of everything a commit keeps: the model's state dict and the optimizer's state."""
    return ({k: v.clone() for k, v in model.state_dict().items()},
            {id(p): {k: (v.clone() if torch.is_tensor(v) else v) for k, v in opt.state[p].items()}
             for p in opt.param_groups[0]["params"] if p in opt.state},
            [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups])


def assert_values(model, opt, expected):
    model_values, opt_state, groups = expected
    for key, tensor in model.state_dict().items():
        assert torch.equal(tensor, model_values[key]), key
    live = {id(p): opt.state[p] for p in opt.param_groups[0]["params"] if p in opt.state}
    assert set(live) == set(opt_state)
    for pid, entry in opt_state.items():
        assert set(live[pid]) == set(entry)
        for key, value in entry.items():
            assert torch.equal(live[pid][key], value) if torch.is_tensor(value) else \
                live[pid][key] == value
    assert [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups] == groups


@pytest.mark.parametrize("make_opt", [
    lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
    lambda p: torch.optim.Adam(p, lr=0.01),
], ids=["sgd_momentum", "adam"])
def test_restore_gives_the_commit_with_state_created_after_it(make_opt):
    model = make_model()
    opt = make_opt(model.parameters())
    state = hvd.elastic.TorchState(model, opt, epoch=0)
    state.commit()  # before the first step: no optimizer state yet
    before = values(model, opt)
    train_step(model, opt, 0)
    assert opt.state  # created by the step
    state.restore()
    assert_values(model, opt, before)  # the state created since is gone

    train_step(model, opt, 1)
    state.epoch = 1
    state.commit()  # now with the optimizer state the step created
    committed = values(model, opt)
    buffers = [t for p in model.parameters() for t in opt.state[p].values() if torch.is_tensor(t)]
    for step in range(2, 5):
        train_step(model, opt, step)
    opt.param_groups[0]["lr"] = 7.0
    state.epoch = 2
    state.restore()
    assert state.epoch == 1
    assert_values(model, opt, committed)
    # Copied back in place: the optimizer keeps its tensors.
    after = [t for p in model.parameters() for t in opt.state[p].values() if torch.is_tensor(t)]
    assert all(a is b for a, b in zip(after, buffers)) and len(after) == len(buffers)
    train_step(model, opt, 5)  # and trains on


@pytest.mark.skipif(not hasattr(torch.optim.Optimizer, "register_load_state_dict_pre_hook"),
                    reason="torch < 2.0 has no load_state_dict hooks")
def test_restore_runs_the_optimizers_load_state_dict_hooks():
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    train_step(model, opt, 0)
    state = hvd.elastic.TorchState(model, opt)
    state.commit()
    committed = values(model, opt)
    calls = []

    def pre_hook(optimizer, state_dict):  # halves the learning rate it loads
        calls.append(("pre", optimizer is opt, state_dict["param_groups"][0]["lr"]))
        groups = [dict(g, lr=g["lr"] / 2) for g in state_dict["param_groups"]]
        return dict(state_dict, param_groups=groups)

    def post_hook(optimizer):
        calls.append(("post", optimizer is opt, optimizer.param_groups[0]["lr"]))

    opt.register_load_state_dict_pre_hook(pre_hook)
    opt.register_load_state_dict_post_hook(post_hook)
    train_step(model, opt, 1)
    state.restore()
    assert calls == [("pre", True, 0.1), ("post", True, 0.05)]
    committed[2][0]["lr"] = 0.05
    assert_values(model, opt, committed)
    state.restore()  # the hook changed a copy: the snapshot still holds the committed values
    assert calls[2:] == [("pre", True, 0.1), ("post", True, 0.05)]
    assert_values(model, opt, committed)


def test_commit_copies_into_buffers_allocated_once(monkeypatch):
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    state = hvd.elastic.TorchState(model, opt)
    train_step(model, opt, 0)
    state.commit()
    ptrs = [b.data_ptr() for s in state._tensor_snapshots() for b in s._buffers]
    expected = sum(t.numel() * t.element_size() for t in model.state_dict().values()) + sum(
        t.numel() * t.element_size() for p in model.parameters() for t in opt.state[p].values())
    assert state.snapshot_nbytes() == expected

    def no_serializing(*args, **kwargs):
        raise AssertionError("a commit must not torch.save tensors")

    monkeypatch.setattr(torch, "save", no_serializing)
    monkeypatch.setattr(torch.Tensor, "__reduce_ex__", no_serializing)
    for step in range(1, 3):
        train_step(model, opt, step)
        state.commit()
        assert [b.data_ptr() for s in state._tensor_snapshots() for b in s._buffers] == ptrs
    committed = values(model, opt)
    monkeypatch.undo()
    train_step(model, opt, 3)
    state.restore()
    assert_values(model, opt, committed)


def test_a_failed_commit_keeps_the_last_snapshot():
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    state = hvd.elastic.TorchState(model, opt, note="ok")
    train_step(model, opt, 0)
    state.commit()
    committed = values(model, opt)
    train_step(model, opt, 1)
    if hvd.rank() == hvd.size() - 1:
        state.note = lambda: None  # does not pickle: this rank's commit fails, so every rank's
    with pytest.raises(hvd.CohortError):
        state.commit()
    state.note = "ok"
    state.restore()
    assert_values(model, opt, committed)  # not what the failed commit saw


def test_replaced_parameters_and_changed_dtypes():
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    state = hvd.elastic.TorchState(model, opt)
    train_step(model, opt, 0)
    state.commit()
    # A new Parameter object for the first layer's weight, in the model and the optimizer.
    old_weight = model[0].weight
    new_weight = torch.nn.Parameter(torch.full_like(old_weight, 0.5))
    model[0].weight = new_weight
    opt.param_groups[0]["params"][0] = new_weight
    opt.state[new_weight] = opt.state.pop(old_weight)
    state.commit()
    committed = values(model, opt)
    train_step(model, opt, 1)
    state.restore()
    assert_values(model, opt, committed)
    assert model[0].weight is new_weight and torch.equal(new_weight, torch.full_like(new_weight,
                                                                                     0.5))
    # A model whose dtype changed gets new buffers of the new dtype at the next commit.
    double = make_model().double()
    only_model = hvd.elastic.TorchState(double)
    only_model.commit()
    double.float()
    only_model.commit()
    committed = {k: v.clone() for k, v in double.state_dict().items()}
    with torch.no_grad():
        for p in double.parameters():
            p.add_(1.0)
    only_model.restore()
    for key, tensor in double.state_dict().items():
        assert tensor.dtype == committed[key].dtype and torch.equal(tensor, committed[key])


def test_tied_weights_and_non_tensor_values():
    model = torch.nn.Sequential(torch.nn.Embedding(10, 4), torch.nn.Linear(4, 10, bias=False))
    model[1].weight = model[0].weight  # tied
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    table = {"losses": [1.0, 0.5], "best": torch.tensor([3.0])}
    state = hvd.elastic.TorchState(model, opt, epoch=3, table=table)
    state.commit()
    weight = model[0].weight.detach().clone()
    with torch.no_grad():
        model[0].weight.mul_(2.0)
    table["losses"].append(0.25)
    table["best"].fill_(9.0)  # tensors among the other values are pickled at commit
    state.epoch = 4
    state.restore()
    assert model[1].weight is model[0].weight and torch.equal(model[0].weight, weight)
    assert state.epoch == 3 and state.table["losses"] == [1.0, 0.5]
    assert torch.equal(state.table["best"], torch.tensor([3.0]))


def test_sync_sends_rank_0s_values_and_restore_returns_to_them():
    model = make_model(seed=50 + hvd.rank())
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    state = hvd.elastic.TorchState(model, opt, epoch=hvd.rank())
    train_step(model, opt, 0)
    state.commit()  # each rank's own values, in its snapshot
    state.sync()
    synced = values(model, opt)
    gathered = hvd.allgather_object([v for v in synced[0].values()])
    for other in gathered[1:]:
        for a, b in zip(gathered[0], other):
            assert torch.equal(a, b)
    assert state.epoch == 0
    train_step(model, opt, 1)
    state.restore()  # to the sync, not to the commit before it
    assert_values(model, opt, synced)
    state.commit()  # and commits go on into the snapshot buffers
    train_step(model, opt, 2)
    state.restore()
    assert_values(model, opt, synced)


def test_a_sync_after_every_rank_restored_keeps_the_model_and_optimizer():
    # Each rank trains on its own data and never allreduces, so the ranks' values differ: a sync
    # that keeps them shows as each rank still holding its own.
    model = make_model(seed=60)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    state = hvd.elastic.TorchState(model, opt, epoch=hvd.rank())
    state.sync()
    assert state.last_sync_kept() == []  # nothing committed yet: rank 0's values
    train_step(model, opt, 0)
    state.commit()
    committed = values(model, opt)
    train_step(model, opt, 1)
    state.restore()  # as elastic.run does after a failure, on every rank
    state.sync()
    assert state.last_sync_kept() == ["model", "optimizer"]
    assert_values(model, opt, committed)  # this rank's own, not rank 0's
    assert state.epoch == 0  # the other attributes are rank 0's
    train_step(model, opt, 2)
    state.restore()
    assert_values(model, opt, committed)
    train_step(model, opt, 3)
    state.commit()
    state.sync()  # no restore: rank 0's values reach every rank
    assert state.last_sync_kept() == []
    gathered = hvd.allgather_object([v for v in values(model, opt)[0].values()])
    for other in gathered[1:]:
        for a, b in zip(gathered[0], other):
            assert torch.equal(a, b)


class Sized:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n


def test_sampler_state_dict_costs_the_same_whatever_the_data_set():
    sampler = hvd.elastic.ElasticSampler(Sized(2_000_000), seed=1)
    state = hvd.elastic.ObjectState(train_sampler=sampler)
    state.sync()
    slowest = 0.0
    for step in range(3):
        sampler.record_batch(step, 8)
        state.commit()
        start = time.perf_counter()
        sd = sampler.state_dict()
        slowest = max(slowest, time.perf_counter() - start)
        assert len(sd["processed_indices"]) == 8 * hvd.size() * (step + 1)
        assert sd["processed_indices"].describes(sampler)  # load_state_dict need not list it
    assert slowest < 0.02  # listing 2M samples one by one takes about a second


def test_sampler_state_dict_lists_the_committed_samples():
    sampler = hvd.elastic.ElasticSampler(Sized(50), seed=2)
    state = hvd.elastic.ObjectState(train_sampler=sampler)
    state.sync()
    sampler.record_batch(0, 3)
    state.commit()
    mine = sampler.get_indices(0, 3)
    everyone = sorted(i for part in hvd.allgather_object(mine) for i in part)
    sd, unread = sampler.state_dict(), sampler.state_dict()
    assert list(sd["processed_indices"]) == everyone and sd["processed_indices"] == everyone
    assert pickle.loads(pickle.dumps(sd))["processed_indices"] == everyone
    sampler.load_state_dict(dict(sd, processed_indices=list(everyone)))  # a plain list too
    sampler.record_batch(1, 3)
    assert sd["processed_indices"] == everyone  # uncommitted records are not part of it
    state.commit()
    assert sd["processed_indices"] == everyone  # listed before the commit: kept
    with pytest.raises(RuntimeError, match="committed set changed"):
        list(unread["processed_indices"])  # not listed before the commit: refused, not wrong
    with pytest.raises(NotImplementedError):
        sampler.load_state_dict(sd)  # no longer the committed set
    sampler.set_epoch(1)
    assert sampler.state_dict()["processed_indices"] == []
    with pytest.raises(NotImplementedError):
        sampler.load_state_dict(dict(sd, epoch=0))  # another epoch's progress


@pytest.mark.parametrize("keep_previous", [False, True])
def test_a_snapshot_keeping_the_previous_generation_loads_either_commit(keep_previous):
    """With keep_previous (TorchState with a ZeroRedundancyOptimizer, whose sync may go back one
    commit) the bytes of the commit before the last still load; after such a step back the next
    commit reuses the dropped generation's buffers and keeps the one it went back to."""
    from cohort.torch.elastic.snapshot import TensorSnapshot
    snapshot = TensorSnapshot("t", keep_previous=keep_previous)
    live = {"w": torch.tensor([1.0, 2.0])}
    first = snapshot.stage(live)
    snapshot.install()
    live["w"].add_(10)
    second = snapshot.stage(live)
    snapshot.install()
    assert snapshot.load(second)["w"].tolist() == [11.0, 12.0]
    if not keep_previous:
        with pytest.raises(ValueError, match="is snapshot 1, but the buffers hold snapshot 2"):
            snapshot.load(first)
        assert snapshot.nbytes() == 8
        return
    assert snapshot.load(first)["w"].tolist() == [1.0, 2.0]  # the step back
    live["w"].add_(100)
    third = snapshot.stage(live)
    snapshot.install()
    assert snapshot.load(first)["w"].tolist() == [1.0, 2.0]
    assert snapshot.load(third)["w"].tolist() == [111.0, 112.0]
    with pytest.raises(ValueError, match="is snapshot 2, but the buffers hold snapshot 1, 3"):
        snapshot.load(second)
    assert snapshot.nbytes() == 16
