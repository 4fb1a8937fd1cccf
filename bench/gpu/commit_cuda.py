"""TorchState.commit() of CUDA model and optimizer state against plain copies of the same bytes, in
one process (a world of one; bench/gpu/commit_cuda.sh runs it and prints the table's title).

For each model (bench/peers/models.py) on the GPU with Adam (its state: two tensors per
parameter), after one training step: the median time of TorchState.commit() (every tensor copied
into snapshot buffers, python/cohort/torch/elastic/snapshot.py), of a device-to-device copy of the
same tensors into buffers allocated once, and of a copy into pinned host memory allocated once
(copy_(non_blocking=True)). Each is timed from a synchronized GPU to the GPU's completion. Also
where the commit's snapshot buffers live. Prints the table's header and one row per model.
``--device cpu`` rehearses the program without a GPU (no pinned copy then).
"""

import argparse
import statistics
import time

import torch

import cohort.torch as hvd
import models


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn, repeats, device):
    """The median wall time of fn() in ms, the GPU synchronized before and after each."""
    times = []
    for _ in range(repeats):
        synchronize(device)
        start = time.perf_counter()
        fn()
        synchronize(device)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def trained(name, device):
    model = models.build(name).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    x, y = models.batch(name, 2, 0)
    torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device)).backward()
    optimizer.step()
    return model, optimizer


def state_tensors(model, optimizer):
    """The tensors a commit copies: the model's state dict and the optimizer's state."""
    tensors = list(model.state_dict().values())
    tensors += [t for s in optimizer.state.values() for t in s.values() if torch.is_tensor(t)]
    return tensors


def copier(tensors, make_buffer, non_blocking):
    buffers = [make_buffer(t) for t in tensors]

    def copy():
        for b, t in zip(buffers, tensors):
            b.copy_(t, non_blocking=non_blocking)
    return copy


def figure(ms, nbytes):
    return f"{ms:.2f} ({nbytes / ms / 1e6:.0f} GB/s)"


def row(name, repeats, device):
    model, optimizer = trained(name, device)
    tensors = state_tensors(model, optimizer)
    nbytes = sum(t.numel() * t.element_size() for t in tensors)
    state = hvd.elastic.TorchState(model, optimizer, epoch=0)
    timed(state.commit, 1, device)  # the first commit allocates the buffers
    commit_ms = timed(state.commit, repeats, device)
    where = sorted({str(b.device) for s in state._tensor_snapshots() for b in s._buffers
                    if b.numel() > 1})
    device_ms = timed(copier(tensors, torch.empty_like, False), repeats, device)
    pinned = "n/a (no GPU)"
    if device.type == "cuda":
        pinned = figure(timed(copier(tensors, lambda t: torch.empty(
            t.shape, dtype=t.dtype, pin_memory=True), True), repeats, device), nbytes)
    print(f"| {name} | {nbytes / 2**20:.0f} MiB ({len(tensors)} tensors) | {', '.join(where)} | "
          f"{figure(commit_ms, nbytes)} | {figure(device_ms, nbytes)} | {pinned} |", flush=True)
    del state, model, optimizer, tensors
    if device.type == "cuda":
        torch.cuda.empty_cache()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="mlp25m,mlp500m")
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    args = p.parse_args()
    hvd.init()
    device = torch.device("cpu")
    if args.device == "cuda":
        device = torch.device("cuda", torch.cuda.current_device())
    print("| model (Adam) | state | snapshot buffers on | TorchState.commit() ms | "
          "device-to-device copy ms | copy to pinned host ms |")
    print("|---|---|---|---|---|---|")
    for name in args.models.split(","):
        row(name, args.repeats, device)
    hvd.shutdown()


if __name__ == "__main__":
    main()
