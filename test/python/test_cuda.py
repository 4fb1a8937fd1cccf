"""cohort.torch on CUDA tensors where the stream matters (run with COHORT_TEST_DEVICE=cuda, at -np 1
through NCCL and at -np 2 with two ranks sharing the GPU; skipped on CPU runs). A collective must
read its input only once torch's current stream has produced it and hand back results on the
input's device: here the producer is held back on the GPU (torch.cuda._sleep) right before each
collective, with no host synchronization, so a collective that read early would see the old
values. Also: a non-default current stream, in-place calls, async handles, every collective's
result device and dtype, and TorchState's snapshots of CUDA state.
"""

import pytest
import torch

import cohort.torch as hvd
import cohort_test_device

if not cohort_test_device.is_cuda():
    pytest.skip("CUDA tests: run with COHORT_TEST_DEVICE=cuda", allow_module_level=True)

DEV = cohort_test_device.device()
HOLD = 50_000_000  # GPU cycles the producer is held back: tens of ms, far longer than a launch


@pytest.fixture(autouse=True, scope="module")
def world():
    hvd.init()
    yield


def late(shape, fill, dtype=torch.float32):
    """A tensor filled with ``fill`` by a kernel queued behind a long one on the current stream:
    its memory holds -1 until the stream gets there, well after this returns."""
    t = torch.full(shape, -1, dtype=dtype, device=DEV)
    torch.cuda._sleep(HOLD)
    return t.fill_(fill)


def ranks_sum(fill_of):
    return sum(fill_of(r) for r in range(hvd.size()))


def on_device(t, dtype):
    assert t.device == DEV and t.dtype == dtype, (t.device, t.dtype)
    return t


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int32, torch.int64, torch.float16,
                                   torch.bfloat16, torch.float32, torch.float64])
def test_allreduce_reads_a_tensor_still_being_produced(dtype):
    out = hvd.allreduce(late((1 << 16,), hvd.rank() + 1, dtype), op=hvd.Sum, name=f"late.{dtype}")
    want = torch.full((1 << 16,), ranks_sum(lambda r: r + 1), dtype=dtype, device=DEV)
    torch.testing.assert_close(on_device(out, dtype), want)


def test_in_place_calls_and_async_handles_on_late_tensors():
    n, me = hvd.size(), hvd.rank()
    x = late((1000,), me + 1)
    assert hvd.allreduce_(x, op=hvd.Sum, name="late.inplace").data_ptr() == x.data_ptr()
    torch.testing.assert_close(on_device(x, torch.float32),
                               torch.full((1000,), float(ranks_sum(lambda r: r + 1)), device=DEV))
    handles = [hvd.allreduce_async(late((4096,), (me + 1) * k), op=hvd.Sum, name=f"late.a{k}")
               for k in range(1, 5)]
    for k, h in enumerate(handles, start=1):
        torch.testing.assert_close(hvd.synchronize(h), torch.full(
            (4096,), float(k * ranks_sum(lambda r: r + 1)), device=DEV))
    b = late((7,), me)
    hvd.broadcast_(b, root_rank=n - 1, name="late.bcast")
    torch.testing.assert_close(b, torch.full((7,), float(n - 1), device=DEV))
    group = [late((5,), me + 1), late((3, 3), 2 * me)]
    hvd.grouped_allreduce_(group, op=hvd.Sum, name="late.group")
    torch.testing.assert_close(group[0], torch.full((5,), float(ranks_sum(lambda r: r + 1)),
                                                    device=DEV))
    torch.testing.assert_close(group[1], torch.full((3, 3), float(ranks_sum(lambda r: 2 * r)),
                                                    device=DEV))


def test_non_contiguous_in_place_on_the_device():
    x = late((6, 4), hvd.rank() + 1)
    x[0, 1] = 100.0  # one element apart, so a transposed write-back in the wrong order shows
    view = x.t()
    hvd.allreduce_(view, op=hvd.Sum, name="late.view")
    want = torch.full((6, 4), float(ranks_sum(lambda r: r + 1)), device=DEV)
    want[0, 1] = 100.0 * hvd.size()
    torch.testing.assert_close(x, want)


def test_a_non_default_current_stream():
    side = torch.cuda.Stream(device=DEV)
    with torch.cuda.stream(side):
        x = late((1 << 14,), hvd.rank() + 1)  # produced on the side stream
        out = hvd.allreduce(x, op=hvd.Sum, name="side.out")
        y = late((1 << 14,), 2.0 * (hvd.rank() + 1))
        hvd.allreduce_(y, op=hvd.Sum, name="side.inplace")
        total = float(ranks_sum(lambda r: r + 1))
        # Read on the side stream, as torch orders it, and then from the default stream.
        torch.testing.assert_close(out, torch.full((1 << 14,), total, device=DEV))
        torch.testing.assert_close(y, torch.full((1 << 14,), 2 * total, device=DEV))
    torch.cuda.current_stream(DEV).wait_stream(side)
    torch.testing.assert_close(out + y, torch.full((1 << 14,), 3 * total, device=DEV))


def test_every_collective_gives_device_results():
    n, me = hvd.size(), hvd.rank()
    gathered = hvd.allgather(late((me + 1, 2), me, torch.int64), name="dev.gather")
    on_device(gathered, torch.int64)
    torch.testing.assert_close(gathered, torch.cat(
        [torch.full((r + 1, 2), r, dtype=torch.int64, device=DEV) for r in range(n)]))
    got = hvd.broadcast(late((3,), me, torch.float16), root_rank=0, name="dev.bcast")
    torch.testing.assert_close(on_device(got, torch.float16),
                               torch.zeros(3, dtype=torch.float16, device=DEV))
    sent = late((2 * n,), me) + torch.arange(2 * n, device=DEV)
    out = on_device(hvd.alltoall(sent, name="dev.alltoall"), torch.float32)
    torch.testing.assert_close(out, torch.cat(
        [torch.arange(2 * me, 2 * me + 2, device=DEV, dtype=torch.float32) + r
         for r in range(n)]))
    scattered = hvd.reducescatter(late((2 * n, 3), me + 1), op=hvd.Sum, name="dev.rs")
    torch.testing.assert_close(on_device(scattered, torch.float32),
                               torch.full((2, 3), float(ranks_sum(lambda r: r + 1)), device=DEV))


def test_gradients_stay_on_the_device():
    x = late((4,), hvd.rank() + 1).requires_grad_()
    hvd.allreduce(x, op=hvd.Sum, name="dev.grad").sum().backward()
    torch.testing.assert_close(on_device(x.grad, torch.float32),
                               torch.full((4,), float(hvd.size()), device=DEV))


def test_torch_state_snapshots_cuda_state_on_the_device():
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 4).to(DEV)
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    model(torch.ones(2, 8, device=DEV)).sum().backward()
    opt.step()
    state = hvd.elastic.TorchState(model, opt, epoch=0)
    state.commit()
    buffers = [b for s in state._tensor_snapshots() for b in s._buffers]
    assert {b.device for b in buffers if b.numel() > 1} == {DEV}  # snapshots stay on the GPU
    committed = {k: v.clone() for k, v in model.state_dict().items()}
    with torch.no_grad():
        torch.cuda._sleep(HOLD)  # the commit's copies are queued behind this, as is this update
        model.weight.add_(1.0)
    state.restore()
    for k, v in model.state_dict().items():
        torch.testing.assert_close(v, committed[k])
        assert v.device == DEV


def test_broadcast_optimizer_state_of_cuda_state():
    torch.manual_seed(1)
    model = torch.nn.Linear(3, 2).to(DEV)
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    if hvd.rank() == 0:  # only root has state; the others take root's
        model(torch.ones(1, 3, device=DEV)).sum().backward()
        opt.step()
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    states = hvd.allgather_object([{k: (v.cpu() if torch.is_tensor(v) else v)
                                    for k, v in opt.state[p].items()}
                                   for p in model.parameters()])
    for other in states[1:]:
        for mine, theirs in zip(states[0], other):
            assert mine.keys() == theirs.keys()
            for key in mine:
                torch.testing.assert_close(mine[key], theirs[key])
    for p in model.parameters():
        assert opt.state[p]["exp_avg"].device == DEV
