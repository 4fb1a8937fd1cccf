"""Horovod's allreduce (horovod.torch) for bench/peers/common.py; run by horovodrun --gloo."""

import horovod.torch as hvd
import torch

import common


def main():
    args = common.parse_args()
    hvd.init()
    barrier_tensor = torch.zeros(1)
    # One name per size, as a training loop's tensors have: the response cache can work.
    common.run(args, hvd.rank(), hvd.size(),
               lambda t: hvd.allreduce_(t, op=hvd.Sum, name=f"bench.{t.numel()}"),
               lambda: hvd.allreduce_(barrier_tensor, op=hvd.Sum, name="bench.barrier"))
    hvd.shutdown()


if __name__ == "__main__":
    main()
