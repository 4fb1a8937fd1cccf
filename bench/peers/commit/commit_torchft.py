"""TorchFT's recovery state for commit/common.py: the transfer of a healthy replica group's state
to a healing one. TorchFT keeps no per-step copy (a failed replica group is healed from a live
peer), so its per-step commit cost is zero; what it pays is the transfer, at recovery. This times
that transfer with the transport TorchFT 0.2.0's Manager uses by default (HTTPTransport,
num_chunks=0: the source serves the state dict over HTTP with torch's streaming save, the receiver
fetches and unpickles it) and the same state dict the Manager sends ({"user": {"default": ...},
"torchft": manager.state_dict()}); then load_state_dict of model and optimizer, as the Manager
applies a healed state. Replica groups pair up (0 -> 1, 2 -> 3): the even one is the source (its
"commit" is send_checkpoint, which exposes the live tensors without copying them; the next commit
first waits out readers with disallow_checkpoint, as the Manager does at should_commit), the odd
one the receiver ("restore" = fetch + load). Each rank is one replica group of one process started
by torchrun, joined through the Lighthouse (run.sh); barriers and the exchange of the HTTP ports
go through Manager.allreduce.
"""

import os
import socket
from datetime import timedelta

import torch
from torchft.checkpointing import HTTPTransport

import common
import torchft_quorum

TIMEOUT = timedelta(seconds=600)  # a 3.8 GB state over HTTP on a busy 2-core machine


def transfer(manager, transport, replica, world, ports):
    """Method factory: the source side or the receiver side of a pair, or idle."""
    role = "source" if replica % 2 == 0 and replica + 1 < world else (
        "receiver" if replica % 2 == 1 else "idle")
    step = [0 if role == "receiver" else -1]

    def method(model, optimizer):
        def send():
            step[0] += 1
            transport.disallow_checkpoint()
            user = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}
            transport.send_checkpoint(dst_ranks=[replica + 1], step=step[0], timeout=TIMEOUT,
                                      state_dict={"user": {"default": user},
                                                  "torchft": manager.state_dict()})

        def receive():
            step[0] += 1
            url = f"http://{socket.gethostname()}:{int(ports[replica - 1])}/checkpoint/"
            state = transport.recv_checkpoint(src_rank=replica - 1, metadata=url, step=step[0],
                                              timeout=TIMEOUT)["user"]["default"]
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])

        return common.Method(send, receive, role=role, how="HTTPTransport")
    return method


def main():
    args = common.parse_args()
    manager, replica, world, allreduce_ = torchft_quorum.join(TIMEOUT)
    transport = HTTPTransport(timeout=TIMEOUT, num_chunks=0)
    ports = torch.zeros(world, dtype=torch.float64)  # every replica group's transport port
    ports[replica] = int(transport.metadata().rsplit(":", 1)[1].split("/")[0])  # http://h:port/...
    allreduce_(ports)
    barrier_tensor = torch.zeros(1)
    common.run(args, replica, world, transfer(manager, transport, replica, world, ports),
               lambda: allreduce_(barrier_tensor))
    if not manager.should_commit():
        raise RuntimeError("TorchFT: should_commit() refused the benchmark's step (an allreduce failed)")
    transport.shutdown(wait=False)
    manager.shutdown()
    os._exit(0)  # the Manager's threads can outlive shutdown(); the results are printed


if __name__ == "__main__":
    main()
