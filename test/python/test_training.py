"""cohort.torch's training helpers under cohortrun (-np 2 and -np 3): DistributedOptimizer against
single-process training on the concatenated batch, broadcast_parameters and
broadcast_optimizer_state, TorchState commit/restore/sync, a DataLoader with worker processes, and
a Horovod-style script written against the horovod.torch names.
"""

import gc
import warnings
import weakref

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
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))


def batch(rank, step, micro=0, rows=5):
    """Rank r's data at a step: deterministic, so every rank can build every rank's batch."""
    g = torch.Generator().manual_seed(1000 * step + 100 * micro + rank)
    return host_randn(rows, 4, generator=g), host_randn(rows, 2, generator=g)


def loss_of(model, x, y):
    return F.mse_loss(model(x), y)


@pytest.mark.parametrize("num_groups", [0, 3])
@pytest.mark.parametrize("make_opt", [
    lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
    lambda p: torch.optim.Adam(p, lr=0.01),
])
def test_distributed_optimizer_matches_single_process(make_opt, num_groups):
    n = hvd.size()
    model, reference = make_model(), make_model()
    opt = hvd.DistributedOptimizer(make_opt(model.parameters()),
                                   named_parameters=model.named_parameters(),
                                   num_groups=num_groups)
    assert isinstance(opt, type(make_opt(make_model().parameters())))
    ref_opt = make_opt(reference.parameters())
    for step in range(3):
        opt.zero_grad()
        loss_of(model, *batch(hvd.rank(), step)).backward()
        opt.step()
        # The reference: the mean loss over every rank's batch (equal sizes), one process.
        ref_opt.zero_grad()
        xs, ys = zip(*(batch(r, step) for r in range(n)))
        loss_of(reference, torch.cat(xs), torch.cat(ys)).backward()
        ref_opt.step()
    for p, q in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("num_groups", [0, 2])
def test_backward_passes_per_step_and_unused_parameter(num_groups):
    """With groups, the group holding b is sent from the hooks on rank 0 and at step() elsewhere
    (b has no gradient there): the names still match, and b's gradient is rank 0's over n."""
    n = hvd.size()

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(1)
            self.a = torch.nn.Linear(4, 2)
            self.b = torch.nn.Linear(4, 2)  # used on rank 0 only

        def forward(self, x, rank):
            out = self.a(x)
            return out + self.b(x) if rank == 0 else out

    model, reference = Net(), Net()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters(),
                                   backward_passes_per_step=2, num_groups=num_groups)
    for step in range(2):
        opt.zero_grad()
        for micro in range(2):
            x, y = batch(hvd.rank(), step, micro)
            F.mse_loss(model(x, hvd.rank()), y).backward()
        opt.step()
        # Reference: the gradient averaged over ranks of the two micro-batches' summed gradients;
        # rank r's loss is built as rank r builds it, so b gets gradient from rank 0 only.
        grads = [torch.zeros_like(p) for p in reference.parameters()]
        for r in range(n):
            for micro in range(2):
                reference.zero_grad()
                x, y = batch(r, step, micro)
                F.mse_loss(reference(x, r), y).backward()
                for g, p in zip(grads, reference.parameters()):
                    if p.grad is not None:
                        g += p.grad
        with torch.no_grad():
            for g, p in zip(grads, reference.parameters()):
                p -= 0.1 * g / n
    for p, q in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)

    if num_groups:
        return  # the refusal below leaves a group sent on some ranks only
    # A third backward pass before the step is refused, as in Horovod.
    opt.zero_grad()
    for _ in range(2):
        F.mse_loss(model(*batch(0, 9)[:1], hvd.rank()), batch(0, 9)[1]).backward()
    with pytest.raises(AssertionError, match="backward_passes_per_step"):
        F.mse_loss(model(*batch(0, 9)[:1], hvd.rank()), batch(0, 9)[1]).backward()
    opt.zero_grad()


def test_synchronize_then_clip_then_skip_synchronize():
    model = make_model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters(), op=hvd.Sum)
    loss_of(model, *batch(hvd.rank(), 0)).backward()
    opt.synchronize()
    summed = [p.grad.clone() for p in model.parameters()]
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1e9)
    with opt.skip_synchronize():
        opt.step()
    reference = make_model()
    for r in range(hvd.size()):
        loss_of(reference, *batch(r, 0)).backward()
    for s, q in zip(summed, reference.parameters()):
        torch.testing.assert_close(s, q.grad, rtol=1e-5, atol=1e-6)


def test_broadcast_parameters_and_optimizer_state():
    model = make_model(seed=10 + hvd.rank())  # different on every rank
    opt = torch.optim.Adam(model.parameters(), lr=0.01 * (hvd.rank() + 1), betas=(0.8, 0.9))
    if hvd.rank() == 0:  # only root has optimizer state
        loss_of(model, *batch(0, 0)).backward()
        opt.step()
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    root_model = make_model(seed=10)
    root_opt = torch.optim.Adam(root_model.parameters(), lr=0.01, betas=(0.8, 0.9))
    loss_of(root_model, *batch(0, 0)).backward()
    root_opt.step()
    for p, q in zip(model.parameters(), root_model.parameters()):
        torch.testing.assert_close(p, q)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.01)
    assert opt.param_groups[0]["betas"] == (0.8, 0.9)
    mine, want = opt.state_dict()["state"], root_opt.state_dict()["state"]
    assert sorted(mine) == sorted(want)
    for index in want:
        for key in want[index]:
            torch.testing.assert_close(mine[index][key], want[index][key])

    # SGD momentum: state created on ranks that have none, from named_parameters too.
    sgd = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.7 + 0.1 * hvd.rank())
    if hvd.rank() == 0:
        loss_of(model, *batch(0, 1)).backward()
        sgd.step()
    hvd.broadcast_parameters(model.named_parameters(), root_rank=0)
    hvd.broadcast_optimizer_state(sgd, root_rank=0)
    assert sgd.param_groups[0]["momentum"] == pytest.approx(0.7)
    buffers = [sgd.state[p]["momentum_buffer"] for p in model.parameters()]
    gathered = hvd.allgather(torch.cat([b.flatten() for b in buffers]).unsqueeze(0))
    for row in gathered:
        torch.testing.assert_close(row, gathered[0])


def test_torch_state_commit_restore_sync():
    model = make_model(seed=20 + hvd.rank())
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    state = hvd.elastic.TorchState(model, opt, epoch=hvd.rank(), note="x")
    state.sync()  # rank 0's model, optimizer and attributes everywhere
    assert state.epoch == 0
    reference = make_model(seed=20)
    for p, q in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p, q)

    loss_of(model, *batch(0, 0)).backward()
    opt.step()
    state.epoch = 1
    state.commit()
    committed = [p.detach().clone() for p in model.parameters()]
    momentum = [opt.state[p]["momentum_buffer"].clone() for p in model.parameters()]

    # Train on, then roll back: parameters, optimizer state and attributes return.
    loss_of(model, *batch(0, 1)).backward()
    opt.step()
    state.epoch = 2
    state.restore()
    assert state.epoch == 1
    for p, c, m in zip(model.parameters(), committed, momentum):
        torch.testing.assert_close(p, c)
        torch.testing.assert_close(opt.state[p]["momentum_buffer"], m)
    assert state.commit_count >= 1


def test_elastic_run_outside_elastic_mode_and_exceptions():
    state = hvd.elastic.ObjectState(counter=0)
    calls = []

    @hvd.elastic.run
    def train(s, increment):
        calls.append(s.counter)
        s.counter += increment
        s.commit()
        return s.counter

    assert train(state, 5) == 5 and calls == [0]

    class Boom(Exception):
        pass

    @hvd.elastic.run
    def broken(s):
        raise Boom("the original")

    with pytest.raises(Boom, match="the original"):
        broken(state)

    # A failing save callback fails the commit on every rank, with the Python error's message.
    bad = hvd.elastic.ObjectState(fn=lambda: None)  # lambdas do not pickle
    with pytest.raises(hvd.CohortError):
        bad.commit()


@pytest.mark.cpu_only("a DataLoader's forked workers read a host data set")
def test_elastic_sampler_and_dataloader_with_workers():
    dataset = torch.utils.data.TensorDataset(torch.arange(50, dtype=torch.float32))
    sampler = hvd.elastic.ElasticSampler(dataset, seed=3)
    state = hvd.elastic.ObjectState(train_sampler=sampler, batch=0)
    state.sync()
    loader = torch.utils.data.DataLoader(dataset, batch_size=4, sampler=sampler, num_workers=2,
                                         multiprocessing_context="fork")
    mine = []
    steps = sampler.num_batches(4)  # the same on every rank; shares differ by one sample
    taken = 0
    for idx, (x,) in enumerate(loader):
        # A collective between batches: forked workers must not disturb the runtime.
        hvd.allreduce(torch.ones(1), op=hvd.Sum, name="loader")
        mine += [int(v) for v in x]
        sampler.record_batch(idx, 4)
        taken += 1
    for _ in range(taken, steps):  # a rank with a shorter share still takes part
        hvd.allreduce(torch.ones(1), op=hvd.Sum, name="loader")
    state.commit()
    everything = hvd.allgather_object(mine)
    flat = sorted(i for part in everything for i in part)
    assert flat == list(range(50))  # each sample once, over the ranks
    assert sampler.unprocessed() == 0
    sampler.set_epoch(1)
    assert sampler.unprocessed() == 50 and len(sampler) in (50 // hvd.size(),
                                                            50 // hvd.size() + 1)
    state.commit()


def test_horovod_style_script_runs_unchanged():
    # Written as against horovod.torch: only the import differs.
    import cohort.torch as hvd  # pylint: disable=reimported,redefined-outer-name

    hvd.init()
    torch.manual_seed(42)
    model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05 * hvd.size(), momentum=0.5)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                         compression=hvd.Compression.fp16,
                                         op=hvd.Average)
    g = torch.Generator().manual_seed(hvd.rank())
    w = torch.tensor([[1.0], [-2.0], [0.5], [3.0]])
    first = last = None
    for epoch in range(15):
        x = host_randn(32, 4, generator=g)
        y = x @ w
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        metric = hvd.allreduce(loss.detach(), name="avg_loss")
        first = metric.item() if first is None else first
        last = metric.item()
    assert last < first
    states = hvd.allgather_object([p.detach() for p in model.parameters()])
    for other in states[1:]:
        for p, q in zip(states[0], other):
            torch.testing.assert_close(p, q)


def test_groups_go_from_the_hooks_and_zero_grad_drops_finished_ones():
    model = make_model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters(), num_groups=2)
    loss_of(model, *batch(hvd.rank(), 0)).backward()
    assert len(opt._cohort_in_flight) == 2  # both groups were sent during the backward pass
    # Finished but never applied, as a failed runtime leaves them before elastic.run's retry.
    for handle, *_ in list(opt._cohort_in_flight.values()):
        hvd.synchronize(handle)
    opt.zero_grad()
    assert not opt._cohort_in_flight
    loss_of(model, *batch(hvd.rank(), 1)).backward()
    opt.step()  # the same group names go again


def test_states_are_freed():
    model = make_model()
    state = hvd.elastic.TorchState(model=model, optimizer=torch.optim.SGD(model.parameters(),
                                                                           lr=0.1), epoch=0)
    state.commit()
    freed = weakref.ref(state)
    del state
    gc.collect()
    assert freed() is None  # the C++ State's callbacks do not keep it alive


def test_elastic_sampler_makes_no_warning():
    # torch 2.x warns when a Sampler is given the data source it does not use.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sampler = hvd.elastic.ElasticSampler(list(range(10)))
    assert len(list(sampler)) == len(sampler)
