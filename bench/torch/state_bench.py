"""TorchState commit and restore against a memcpy of the same bytes (issue 27, item 4).

    PYTHONPATH=build/python /usr/bin/python3 bench/torch/state_bench.py --mparams 100

A model of --mparams million float32 parameters (a stack of --width x --width linear layers) and
SGD with momentum (one step, so every momentum buffer exists): its state is the parameters and the
momentum buffers, twice the parameters' bytes. Each trial times, in turn, a flat ``copy_`` of that
many bytes between two preallocated buffers (the memcpy), ``state.commit()`` and
``state.restore()``; the figures are medians over the trials, and the first commit (which
allocates the snapshot buffers) is shown apart. With --serialize it also times what commit and
restore cost by serializing (``torch.save`` of both state dicts into memory, and ``torch.load``
and ``load_state_dict`` back), as TorchState did before. Runs in one process (a world of one) or
under cohortrun (every rank measures; rank 0 prints).
"""
import argparse
import io
import statistics
import time

import torch

import cohort.torch as hvd


def parse():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mparams", type=float, default=2.0, help="parameters, in millions")
    p.add_argument("--width", type=int, default=4096, help="each layer's inputs and outputs")
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--serialize", action="store_true",
                   help="also time torch.save/torch.load of the state dicts")
    return p.parse_args()


def make_model(mparams, width):
    width = min(width, max(8, int((mparams * 1e6) ** 0.5)))
    layers = max(1, round(mparams * 1e6 / (width * width + width)))
    return torch.nn.Sequential(*[torch.nn.Linear(width, width) for _ in range(layers)])


def timed(fn):
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def serialize_round_trip(model, opt):
    """The commit and the restore of a TorchState that serializes (before issue 27)."""
    saved = []

    def save():
        for value in (model.state_dict(), opt.state_dict()):
            out = io.BytesIO()
            torch.save(value, out)
            saved.append(out.getvalue())

    def load():
        model.load_state_dict(torch.load(io.BytesIO(saved[0])))
        opt.load_state_dict(torch.load(io.BytesIO(saved[1])))

    return timed(save), timed(load)


def main():
    args = parse()
    hvd.init()
    torch.manual_seed(0)
    model = make_model(args.mparams, args.width)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    for p in model.parameters():
        p.grad = torch.full_like(p, 1e-3)
    opt.step()  # creates the momentum buffers
    state = hvd.elastic.TorchState(model, opt, epoch=0)

    tensors = list(model.state_dict().values()) + [
        opt.state[p]["momentum_buffer"] for p in model.parameters()]
    nbytes = sum(t.numel() * t.element_size() for t in tensors)
    flat = torch.float32 if nbytes % 4 == 0 else torch.uint8  # the state's own element size
    source = torch.ones(nbytes // torch.tensor([], dtype=flat).element_size(), dtype=flat)
    target = torch.zeros_like(source)
    target.copy_(source)  # touched: no page faults in the timed copies

    first_commit = timed(state.commit)
    if hasattr(state, "snapshot_nbytes"):  # absent before issue 27 (to time the old commit)
        assert state.snapshot_nbytes() == nbytes, (state.snapshot_nbytes(), nbytes)
    memcpy, commit, restore, save, load = [], [], [], [], []
    for _ in range(args.trials):
        memcpy.append(timed(lambda: target.copy_(source)))
        commit.append(timed(state.commit))
        restore.append(timed(state.restore))
        if args.serialize:
            t_save, t_load = serialize_round_trip(model, opt)
            save.append(t_save)
            load.append(t_load)

    med = {k: statistics.median(v) for k, v in
           dict(memcpy=memcpy, commit=commit, restore=restore, save=save, load=load).items() if v}
    line = (f"RESULT params={sum(p.numel() for p in model.parameters())} "
            f"tensors={len(tensors)} state_mb={nbytes / 1e6:.1f} trials={args.trials} "
            f"threads={torch.get_num_threads()} memcpy_ms={med['memcpy']:.1f} "
            f"first_commit_ms={first_commit:.1f} commit_ms={med['commit']:.1f} "
            f"restore_ms={med['restore']:.1f} commit_x={med['commit'] / med['memcpy']:.2f} "
            f"restore_x={med['restore'] / med['memcpy']:.2f}")
    if args.serialize:
        line += (f" torch_save_ms={med['save']:.1f} torch_load_ms={med['load']:.1f} "
                 f"torch_save_x={med['save'] / med['memcpy']:.2f}")
    if hvd.rank() == 0:
        print(line, flush=True)


if __name__ == "__main__":
    main()
