"""The program logic every system's allreduce harness shares (bench/peers, issue 28).

Each harness (allreduce_<system>.py) only joins its job and hands over two callables: an in-place
float32 sum allreduce of a torch tensor through the framework's own API, and a barrier. Sizes,
warm-up, iteration counts, the correctness check and the RESULT line are the same for all, so the
systems differ only in the allreduce they call. Works with any Python 3 and torch >= 1.13.
"""

import time

import torch

import harness


def sizes(min_bytes, max_bytes):
    """Powers of two from min_bytes to max_bytes (both rounded to whole float32 elements)."""
    out, n = [], max(4, min_bytes)
    while n <= max_bytes:
        out.append(n)
        n *= 2
    return out


def iterations(nbytes, args):
    """Timed iterations at one size: about target_bytes moved, within [min_iters, max_iters]."""
    return max(args.min_iters, min(args.max_iters, args.target_bytes // nbytes))


def parse_args(argv=None):
    p = harness.parser("allreduce latency and bandwidth (bench/peers)")
    p.add_argument("--min-bytes", type=int, default=8)
    p.add_argument("--max-bytes", type=int, default=256 << 20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--min-iters", type=int, default=3)
    p.add_argument("--max-iters", type=int, default=200)
    p.add_argument("--target-bytes", type=int, default=512 << 20)
    return p.parse_args(argv)


def check(allreduce_, world, numel):
    """One allreduce of ones must give world everywhere: a wrong sum is an error, not a figure."""
    t = torch.ones(numel, dtype=torch.float32)
    allreduce_(t)
    if not torch.all(t == world):
        raise RuntimeError(f"allreduce of {numel} ones over {world} ranks gave {t[:4].tolist()}...,"
                           f" expected {world}")


def run(args, rank, world, allreduce_, barrier):
    """Times allreduce_ at every size; prints one RESULT line per size from this rank."""
    for nbytes in sizes(args.min_bytes, args.max_bytes):
        numel = nbytes // 4
        check(allreduce_, world, numel)
        t = torch.zeros(numel, dtype=torch.float32)  # sums of zeros stay finite
        for _ in range(args.warmup):
            allreduce_(t)
        iters = iterations(nbytes, args)
        barrier()
        start = time.perf_counter()
        for _ in range(iters):
            allreduce_(t)
        us = (time.perf_counter() - start) / iters * 1e6
        harness.result("allreduce", args, np=world, rank=rank, bytes=nbytes, iters=iters,
                       us=f"{us:.2f}")
    barrier()

