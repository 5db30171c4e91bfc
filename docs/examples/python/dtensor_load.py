"""Tensor parallelism with DTensors: each of WORLD ranks reads only its slice; full_tensor() is the file's tensor.

usage: python dtensor_load.py FILE.safetensors WORLD
"""
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Shard

import rootspan.torch


def rank_main(rank, world, port, path):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    mesh = init_device_mesh("cpu", (world,))
    params, read = rootspan.torch.load_dtensors_with_stats(path, mesh, {"*.weight": Shard(0)})
    whole = {name: p.full_tensor() for name, p in params.items()}  # a collective: every rank asks for all
    if rank == 0:
        same = all(torch.equal(whole[n], t) for n, t in rootspan.torch.load(path).items() if n in whole)
        print(f"{len(params)} tensors; full_tensor() equals the file: {same}")
    print(f"rank {rank} read {read} bytes", flush=True)
    del params, whole  # the tensors go, and the memory rootspan holds for them
    dist.destroy_process_group()
    # End before Python's finalization: torch's gloo thread may still be dropping the last collective's
    # tensors, and doing so while the interpreter finalizes aborts the process.
    os._exit(0)


if __name__ == "__main__":
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(rank_main, args=(int(sys.argv[2]), port, sys.argv[1]), nprocs=int(sys.argv[2]), join=True)
