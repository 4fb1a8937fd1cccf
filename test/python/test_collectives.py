"""cohort.torch's collectives under cohortrun (-np 2 and -np 3), against references computed with
torch in this process: every input is a deterministic function of the rank, so every rank knows
every rank's input. Also errors (before init, bad dtypes and devices, mismatched shapes), threads,
process sets and objects.
"""

import threading
import time

import pytest
import torch

import cohort.torch as hvd
import cohort_test_device


def test_calls_before_init_raise_not_initialized():
    # Runs first (pytest keeps file order): nothing has called init() yet.
    assert not hvd.is_initialized()
    for call in (hvd.rank, hvd.size, hvd.local_rank,
                 lambda: hvd.allreduce(torch.ones(2)),
                 lambda: hvd.broadcast_object(1)):
        with pytest.raises(hvd.NotInitialized, match="not initialized"):
            call()


@pytest.fixture(autouse=True)
def world(request):
    """Every test but the first runs in an initialized world (shut down at exit)."""
    if request.function is not test_calls_before_init_raise_not_initialized:
        hvd.init()  # does nothing once initialized
    yield


def value(rank, shape=(3, 4), dtype=torch.float32):
    """Rank r's input: distinct per rank and element, exact in every dtype used."""
    n = 1
    for d in shape:
        n *= d
    base = torch.arange(n, dtype=torch.float64).reshape(shape) % 7
    return (base + 2 * rank + 1).to(dtype)


def everyone(fn):
    return [fn(r) for r in range(hvd.size())]


def test_world_shape():
    assert hvd.is_initialized()
    assert 0 <= hvd.rank() < hvd.size()
    assert hvd.local_size() == hvd.size()  # one host
    assert hvd.local_rank() == hvd.rank()
    assert hvd.cross_size() == 1 and hvd.cross_rank() == 0
    assert hvd.gloo_enabled() == (hvd.size() > 1) and not hvd.mpi_enabled()  # np 1: no peers
    assert hvd.global_process_set.ranks == list(range(hvd.size()))


@pytest.mark.parametrize("op,reference", [
    (hvd.Sum, lambda xs: torch.stack(xs).sum(0)),
    (hvd.Average, lambda xs: torch.stack(xs).mean(0)),
    (hvd.Min, lambda xs: torch.stack(xs).min(0).values),
    (hvd.Max, lambda xs: torch.stack(xs).max(0).values),
    (hvd.Product, lambda xs: torch.stack(xs).prod(0)),
])
def test_allreduce_ops(op, reference):
    x = value(hvd.rank(), dtype=torch.float64)
    out = hvd.allreduce(x, op=op, name=f"ops.{op}")
    torch.testing.assert_close(out, reference(everyone(lambda r: value(r, dtype=torch.float64))))
    torch.testing.assert_close(x, value(hvd.rank(), dtype=torch.float64))  # input untouched


def test_allreduce_average_flag_and_scaling():
    x = value(hvd.rank())
    total = torch.stack(everyone(value)).sum(0)
    torch.testing.assert_close(hvd.allreduce(x, average=False), total)
    torch.testing.assert_close(hvd.allreduce(x), total / hvd.size())  # Average by default
    out = hvd.allreduce(x, op=hvd.Sum, prescale_factor=0.5, postscale_factor=3.0)
    torch.testing.assert_close(out, total * 1.5)
    with pytest.raises(ValueError, match="supersedes average"):
        hvd.allreduce(x, average=True, op=hvd.Sum)
    with pytest.raises(NotImplementedError, match="Adasum"):
        hvd.allreduce(x, op=hvd.Adasum)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int32, torch.int64,
                                   torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_allreduce_dtypes(dtype):
    out = hvd.allreduce(value(hvd.rank(), dtype=dtype), op=hvd.Sum, name=f"dtype.{dtype}")
    want = torch.stack(everyone(lambda r: value(r, dtype=torch.float64))).sum(0).to(dtype)
    assert out.dtype == dtype
    torch.testing.assert_close(out, want)


def test_allreduce_bool_is_logical():
    mine = torch.tensor([True, hvd.rank() == 0, False])
    torch.testing.assert_close(hvd.allreduce(mine, op=hvd.Max), torch.tensor([True, True, False]))
    torch.testing.assert_close(hvd.allreduce(mine, op=hvd.Min),
                               torch.tensor([True, hvd.size() == 1, False]))


def test_in_place_and_async():
    total = torch.stack(everyone(value)).sum(0)
    x = value(hvd.rank())
    returned = hvd.allreduce_(x, op=hvd.Sum)
    assert returned.data_ptr() == x.data_ptr()
    torch.testing.assert_close(x, total)

    y = value(hvd.rank())
    handle = hvd.allreduce_async_(y, op=hvd.Sum, name="async.inplace")
    out = hvd.synchronize(handle)
    assert hvd.poll(handle)
    torch.testing.assert_close(y, total)
    assert out.data_ptr() == y.data_ptr()

    handles = [hvd.allreduce_async(value(hvd.rank()) * k, op=hvd.Sum, name=f"async.{k}")
               for k in range(4)]
    for k, h in enumerate(handles):
        torch.testing.assert_close(hvd.synchronize(h), total * k)


def test_non_contiguous_in_place():
    x = value(hvd.rank(), shape=(4, 6)).t()  # a transposed view
    assert not x.is_contiguous()
    hvd.allreduce_(x, op=hvd.Sum)
    torch.testing.assert_close(x, torch.stack(everyone(lambda r: value(r, (4, 6)))).sum(0).t())


def test_grouped_allreduce():
    shapes = [(3,), (2, 5), (1,)]
    mine = [value(hvd.rank(), s) for s in shapes]
    want = [torch.stack(everyone(lambda r: value(r, s))).mean(0) for s in shapes]
    for got, w in zip(hvd.grouped_allreduce(mine), want):
        torch.testing.assert_close(got, w)
    handle = hvd.grouped_allreduce_async([t.clone() for t in mine], name="g.async")
    for got, w in zip(hvd.synchronize(handle), want):
        torch.testing.assert_close(got, w)
    inplace = [t.clone() for t in mine]
    hvd.grouped_allreduce_(inplace)
    handle = hvd.grouped_allreduce_async_([t.clone() for t in mine], name="g.async_")
    for a, b, w in zip(inplace, hvd.synchronize(handle), want):
        torch.testing.assert_close(a, w)
        torch.testing.assert_close(b, w)


def test_fp16_compression():
    x = value(hvd.rank())
    out = hvd.allreduce(x, op=hvd.Sum, compression=hvd.Compression.fp16)
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, torch.stack(everyone(value)).sum(0))
    compressed, ctx = hvd.Compression.fp16.compress(x)
    assert compressed.dtype == torch.float16
    ints = torch.arange(3)
    assert hvd.Compression.fp16.compress(ints)[0] is ints


def test_allgather_with_different_first_dimensions():
    mine = value(hvd.rank(), shape=(hvd.rank() + 1, 2))
    want = torch.cat(everyone(lambda r: value(r, shape=(r + 1, 2))))
    torch.testing.assert_close(hvd.allgather(mine), want)
    torch.testing.assert_close(hvd.synchronize(hvd.allgather_async(mine, name="ag")), want)


def test_allgather_gradient():
    x = value(hvd.rank(), shape=(2, 3)).requires_grad_()
    out = hvd.allgather(x)
    (out * torch.arange(out.numel()).reshape(out.shape)).sum().backward()
    rows = torch.arange(out.numel()).reshape(out.shape)[2 * hvd.rank():2 * hvd.rank() + 2]
    # Horovod averages the output gradient over the ranks (every rank gives the same one here).
    torch.testing.assert_close(x.grad, rows.float())


def test_broadcast():
    for root in range(hvd.size()):
        mine = value(hvd.rank(), shape=(5,))
        torch.testing.assert_close(hvd.broadcast(mine, root), value(root, shape=(5,)))
        torch.testing.assert_close(mine, value(hvd.rank(), shape=(5,)))
        hvd.broadcast_(mine, root, name=f"b_{root}")
        torch.testing.assert_close(mine, value(root, shape=(5,)))
        h = hvd.broadcast_async(value(hvd.rank(), shape=(5,)), root, name=f"ba{root}")
        torch.testing.assert_close(hvd.synchronize(h), value(root, shape=(5,)))
        t = value(hvd.rank(), shape=(5,))
        hvd.synchronize(hvd.broadcast_async_(t, root, name=f"ba_{root}"))
        torch.testing.assert_close(t, value(root, shape=(5,)))


def test_alltoall_even_and_with_splits():
    n, me = hvd.size(), hvd.rank()
    mine = torch.arange(2 * n, dtype=torch.float32) + 100 * me  # 2 rows to every rank
    out = hvd.alltoall(mine)
    assert torch.is_tensor(out)  # no splits given: the output alone, as Horovod
    want = torch.cat([torch.arange(2 * me, 2 * me + 2, dtype=torch.float32) + 100 * r
                      for r in range(n)])
    torch.testing.assert_close(out, want)

    # Rank r sends j + r + 1 rows to rank j.
    def splits_of(r):
        return [j + r + 1 for j in range(n)]

    def rows_of(r):
        return torch.arange(sum(splits_of(r)), dtype=torch.int64).reshape(-1, 1) + 1000 * r

    splits = torch.tensor(splits_of(me), dtype=torch.int32)
    out, received = hvd.alltoall(rows_of(me), splits=splits)
    expected = []
    for r in range(n):
        start = sum(splits_of(r)[:me])
        expected.append(rows_of(r)[start:start + splits_of(r)[me]])
    torch.testing.assert_close(out, torch.cat(expected))
    assert received.dtype == torch.int32
    assert received.tolist() == [me + r + 1 for r in range(n)]
    out2, received2 = hvd.synchronize(hvd.alltoall_async(rows_of(me), splits=splits_of(me)))
    torch.testing.assert_close(out2, torch.cat(expected))
    assert received2.tolist() == received.tolist()


def test_reducescatter():
    n, me = hvd.size(), hvd.rank()
    rows = 2 * n + 1
    x = value(me, shape=(rows, 2))
    total = torch.stack(everyone(lambda r: value(r, shape=(rows, 2)))).sum(0)
    counts = [rows // n + (1 if r < rows % n else 0) for r in range(n)]
    start = sum(counts[:me])
    mine = total[start:start + counts[me]]
    torch.testing.assert_close(hvd.reducescatter(x, op=hvd.Sum), mine)
    torch.testing.assert_close(hvd.reducescatter(x), mine / n)  # Average by default
    torch.testing.assert_close(hvd.synchronize(hvd.reducescatter_async(x, op=hvd.Sum)), mine)


def test_barrier_and_objects():
    hvd.barrier()
    obj = {"rank": hvd.rank(), "payload": list(range(hvd.rank()))}
    assert hvd.broadcast_object(obj, root_rank=hvd.size() - 1) == \
        {"rank": hvd.size() - 1, "payload": list(range(hvd.size() - 1))}
    gathered = hvd.allgather_object(obj)
    assert gathered == [{"rank": r, "payload": list(range(r))} for r in range(hvd.size())]


def test_join_with_uneven_data():
    # Rank r has r + 1 batches; the ranks that run out join while the others keep reducing.
    me, n = hvd.rank(), hvd.size()
    for step in range(me + 1):
        out = hvd.allreduce(torch.ones(3), op=hvd.Sum, name="uneven")
        active = sum(1 for r in range(n) if r >= step)
        torch.testing.assert_close(out, torch.full((3,), float(active)))
    assert hvd.join() in range(n)


@pytest.mark.multi_rank
def test_process_set():
    ps = hvd.add_process_set([0, 1])
    assert ps.ranks == [0, 1] and ps.size() == 2
    if ps.included():
        assert ps.rank() == hvd.rank()
        # Named: unnamed calls are numbered per process, and only members make these.
        out = hvd.allreduce(value(hvd.rank()), op=hvd.Sum, name="ps", process_set=ps)
        torch.testing.assert_close(out, value(0) + value(1))
        torch.testing.assert_close(hvd.allgather(value(hvd.rank(), (1, 2)), name="ps",
                                                 process_set=ps),
                                   torch.cat([value(0, (1, 2)), value(1, (1, 2))]))
    else:
        with pytest.raises(hvd.InvalidArgument):
            ps.rank()
    hvd.barrier()
    with pytest.raises(hvd.InvalidArgument, match="has not been added"):
        hvd.allreduce(torch.ones(1), process_set=hvd.ProcessSet([0]))


def test_bad_input_raises_precisely():
    with pytest.raises(hvd.InvalidArgument, match="complex64 is not supported") as info:
        hvd.allreduce(torch.zeros(2, dtype=torch.complex64))
    assert isinstance(info.value, ValueError) and isinstance(info.value, hvd.CohortError)
    assert isinstance(info.value, RuntimeError)
    with pytest.raises(hvd.InvalidArgument, match="int16 is not supported"):
        hvd.allreduce(torch.zeros(2, dtype=torch.int16))  # int16 only moves (allgather, ...)
    with pytest.raises(hvd.InvalidArgument, match="device 'meta'"):
        hvd.allreduce(torch.zeros(2).to("meta"))
    with pytest.raises(hvd.InvalidArgument, match="expected a torch.Tensor"):
        hvd.allreduce([1.0, 2.0])
    # The runtime is untouched by refused calls.
    torch.testing.assert_close(hvd.allreduce(torch.ones(1), op=hvd.Sum),
                               torch.full((1,), float(hvd.size())))


@pytest.mark.multi_rank
def test_mismatched_shapes_raise_on_every_rank_and_runtime_goes_on():
    x = torch.ones(2 + hvd.rank())
    with pytest.raises(hvd.MismatchError) as info:
        hvd.allreduce(x, name="mismatch")
    assert "mismatch" in str(info.value)
    handle = hvd.allgather_async(torch.ones(1, 1 + hvd.rank()), name="mismatch.gather")
    with pytest.raises(hvd.MismatchError):
        hvd.synchronize(handle)
    torch.testing.assert_close(hvd.allreduce(torch.ones(2), op=hvd.Sum, name="after"),
                               torch.full((2,), float(hvd.size())))


def _wait_bounded(handle, seconds=15.0):
    """synchronize(handle), failing the test rather than waiting past `seconds`."""
    deadline = time.monotonic() + seconds
    while not hvd.poll(handle):
        assert time.monotonic() < deadline, f"no result within {seconds} s"
        time.sleep(0.005)
    return hvd.synchronize(handle)


@pytest.mark.multi_rank
def test_one_name_for_different_operations_raises_on_every_rank():
    # Rank 0 allreduces what the others broadcast: one name, so a mismatch on every rank at once
    # (Horovod's prefixes made them two names that waited for each other).
    x = torch.ones(3)
    if hvd.rank() == 0:
        handle = hvd.allreduce_async(x, name="one.name")
    else:
        handle = hvd.broadcast_async(x, 0, name="one.name")
    with pytest.raises(hvd.MismatchError, match="mismatched operations: rank 0 allreduce, rank 1 "
                                                "broadcast"):
        _wait_bounded(handle)
    dtype = torch.float32 if hvd.rank() == 0 else torch.float64
    handle = hvd.allreduce_async(torch.ones(3, dtype=dtype), name="one.name")
    with pytest.raises(hvd.MismatchError, match="mismatched data types: rank 0 float32, rank 1 "
                                                "float64"):
        _wait_bounded(handle)
    torch.testing.assert_close(hvd.allreduce(torch.ones(2), op=hvd.Sum, name="one.name"),
                               torch.full((2,), float(hvd.size())))


def test_thread_submits_while_another_waits():
    # The main thread blocks in a collective whose partner is submitted by a second thread on the
    # other ranks' side: both must progress, so waits must release the GIL.
    results = {}

    def worker():
        # torch's default device is per thread: this one's tensor goes on the test's device too.
        results["thread"] = hvd.allreduce(torch.full((4,), 2.0, device=cohort_test_device.device()),
                                          op=hvd.Sum, name="thread.a")

    t = threading.Thread(target=worker)
    t.start()
    results["main"] = hvd.allreduce(torch.full((4,), 3.0), op=hvd.Sum, name="thread.b")
    t.join()
    torch.testing.assert_close(results["thread"], torch.full((4,), 2.0 * hvd.size()))
    torch.testing.assert_close(results["main"], torch.full((4,), 3.0 * hvd.size()))


def test_allreduce_gradient():
    x = value(hvd.rank(), shape=(3,)).requires_grad_()
    out = hvd.allreduce(x, op=hvd.Sum)
    out.sum().backward()
    torch.testing.assert_close(x.grad, torch.full((3,), float(hvd.size())))
