"""An elastic training script written against horovod.torch's names (cohort.torch as hvd), run by
elastic_test.sh under cohortrun's elastic mode with a worker SIGKILLed at a chosen step.

It trains a small model with DistributedOptimizer on samples handed out by hvd.elastic's
ElasticSampler, commits every few steps, and records in its TorchState, per epoch, every sample the
ranks trained (allgathered each step). At the end rank 0 checks that the committed history trains
each sample exactly once per epoch and prints "elastic_train: exactly once".

With COHORT_TEST_DEVICE=cuda (cohort_test_device.py) the data, the model and the optimizer's state
live on the GPU (the rank's local rank modulo the GPUs present), so the TorchState commits and
restores CUDA state and the gradients are reduced on the device; the sample ids stay host
bookkeeping.

With --zero the optimizer is a ZeroRedundancyOptimizer over Adam (its moments sharded over the
ranks, committed with replicas and resharded into the next world by the TorchState), and every
rank also steps an unsharded shadow (a plain Adam on the allreduced gradients, kept as a committed
attribute): after every step the model must equal the shadow, so a sharded state restored or
resharded wrongly shows at the first step after the reset.

Log lines: "elastic_train: device D", "elastic_train: start rank=R size=S resets=N epoch=E
reshard_bytes=B kept=K" (K: the values the sync before kept as every rank held them, or none),
"elastic_train: epoch E done rank=R size=S", "elastic_train: failing at step K",
"elastic_train: finished epochs=E resets=N". With --until-file training stops at the first epoch's
end after that file exists (or after --epochs), so a test can change the hosts while the job trains.
"""

import argparse
import copy
import os
import signal
import sys
import time

import torch

import cohort.torch as hvd
import cohort_test_device


def parse():
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=60)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--commit-every", type=int, default=2)
    parser.add_argument("--fail-step", type=int, default=-1)
    parser.add_argument("--fail-rank", type=int, default=1)
    parser.add_argument("--fail-marker", default="")
    parser.add_argument("--fail-how", choices=["kill", "term"], default="kill")
    parser.add_argument("--zero", action="store_true")
    parser.add_argument("--until-file", default="",
                        help="train until this file exists (rank 0 looks at each epoch's end)")
    parser.add_argument("--step-delay-ms", type=float, default=0)
    return parser.parse_args()


def log(message):
    print(f"elastic_train: {message}", flush=True)


def maybe_fail(args, step):
    """The rank that is fail_rank at fail_step kills itself (SIGKILL), or asks to drain (SIGTERM),
    once per job (the marker file)."""
    if step != args.fail_step or hvd.rank() != args.fail_rank or not args.fail_marker:
        return
    try:
        os.close(os.open(args.fail_marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return
    if args.fail_how == "term":
        log(f"draining at step {step} as rank {hvd.rank()}")
        os.kill(os.getpid(), signal.SIGTERM)
        assert hvd.elastic.drain_requested()
        return
    log(f"failing at step {step} as rank {hvd.rank()}")
    os.kill(os.getpid(), signal.SIGKILL)


class Shadow:
    """An unsharded Adam stepping on the allreduced gradients beside the ZeroRedundancyOptimizer."""

    TOLERANCE = 1e-5  # both average in float32, in other orders: last-bit differences only

    def __init__(self, model):
        self.model = copy.deepcopy(model)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=0.01)
        self.largest = 0.0

    def saved(self):
        return copy.deepcopy((self.model.state_dict(), self.optimizer.state_dict()))

    def load(self, saved):
        """The shadow as committed (its first version is committed with the state's first
        commit, so a state that goes back to that commit takes the shadow back with it)."""
        if saved is not None:
            self.model.load_state_dict(saved[0])
            self.optimizer.load_state_dict(copy.deepcopy(saved[1]))

    def step(self, model):
        for mine, theirs in zip(self.model.parameters(), model.parameters()):
            grad = theirs.grad if theirs.grad is not None else torch.zeros_like(theirs)
            mine.grad = hvd.allreduce(grad, op=hvd.Average, name="shadow.grad")
        self.optimizer.step()

    def check(self, model, step):
        for mine, theirs in zip(self.model.parameters(), model.parameters()):
            self.largest = max(self.largest, (mine - theirs).abs().max().item())
        if self.largest > self.TOLERANCE:
            log(f"FAILED: at step {step} the model is {self.largest:.1e} from its unsharded "
                f"shadow")
            sys.exit(1)


def until_file_exists(args):
    """Rank 0's answer, the same on every rank: has --until-file appeared?"""
    if not args.until_file:
        return False
    seen = torch.tensor([int(hvd.rank() == 0 and os.path.exists(args.until_file))])
    return bool(hvd.broadcast(seen, 0, name="until_file").item())


def main():
    args = parse()
    hvd.init()
    device = cohort_test_device.device(hvd.local_rank())
    if device.type == "cuda":
        torch.cuda.set_device(device)
    log(f"device {device}")
    torch.manual_seed(0)
    features = torch.randn(args.samples, 3)
    targets = features @ torch.tensor([[1.0], [-1.0], [2.0]])
    dataset = torch.utils.data.TensorDataset(features.to(device), targets.to(device))

    if args.zero:
        model = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
        optimizer = hvd.ZeroRedundancyOptimizer(model.parameters(), torch.optim.Adam, lr=0.01)
        shadow = Shadow(model)
    else:
        model = torch.nn.Linear(3, 1).to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                             op=hvd.Sum)
        shadow = None
    sampler = hvd.elastic.ElasticSampler(dataset, seed=7)
    state = hvd.elastic.TorchState(model, optimizer, train_sampler=sampler, epoch=0, step=0,
                                   history={},
                                   shadow=shadow.saved() if shadow is not None else None)
    resets = []
    state.register_reset_callbacks([lambda: resets.append(hvd.size())])

    def commit():
        if shadow is not None:
            state.shadow = shadow.saved()
        state.commit()

    @hvd.elastic.run
    def train(state):
        log(f"start rank={hvd.rank()} size={hvd.size()} resets={len(resets)} "
            f"epoch={state.epoch} reshard_bytes={state.last_reshard_bytes()} "
            f"kept={','.join(state.last_sync_kept()) or 'none'}")
        if shadow is not None:
            shadow.load(state.shadow)
        while state.epoch < args.epochs:
            # The same number of batches on every rank; a rank with less left gets short ones.
            for batch in state.train_sampler.batches(args.batch):
                maybe_fail(args, state.step)
                optimizer.zero_grad()
                if batch:
                    x, y = dataset[batch]
                    torch.nn.functional.mse_loss(model(x), y, reduction="sum").backward()
                if shadow is not None:
                    shadow.step(model)
                optimizer.step()  # an unused model (empty batch) contributes zero gradients
                if shadow is not None:
                    shadow.check(model, state.step)
                trained = hvd.allgather(torch.tensor(batch, dtype=torch.int64), name="ids")
                state.history.setdefault(state.epoch, []).extend(trained.tolist())
                state.train_sampler.record_indices(batch)
                state.step += 1
                if state.step % args.commit_every == 0:
                    commit()
                if args.step_delay_ms:
                    time.sleep(args.step_delay_ms / 1000)
            commit()
            log(f"epoch {state.epoch} done rank={hvd.rank()} size={hvd.size()}")
            state.epoch += 1
            state.train_sampler.set_epoch(state.epoch)
            commit()
            if until_file_exists(args):
                break
        log(f"finished epochs={state.epoch} resets={len(resets)}")
        if shadow is not None:
            log(f"zero matched its unsharded shadow at every step (largest difference "
                f"{shadow.largest:.1e})")

    train(state)

    if hvd.rank() == 0:
        held = {t.device for t in model.state_dict().values()}
        held |= {t.device for s in optimizer.state.values() for t in s.values()
                 if torch.is_tensor(t) and t.numel() > 1}
        if held != {device}:
            log(f"FAILED: the trained state is on {sorted(map(str, held))}, not {device}")
            sys.exit(1)
        for epoch, ids in sorted(state.history.items()):
            if sorted(ids) != list(range(args.samples)):
                log(f"FAILED: epoch {epoch} trained {len(ids)} samples, "
                    f"{len(set(ids))} distinct, of {args.samples}")
                sys.exit(1)
        if len(state.history) != state.epoch:
            log(f"FAILED: {len(state.history)} epochs in the history")
            sys.exit(1)
        log(f"exactly once: {len(state.history)} epochs of {args.samples} samples")
    hvd.shutdown()


if __name__ == "__main__":
    main()
