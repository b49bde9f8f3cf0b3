"""Runs a function on several gloo ranks, each a process of its own, and collects what
each rank returned (the way the evaluation job runs, on one machine).

Ranks start from a fork server, as separate hosts would: a rank holds its own
shard and nothing of the others' (a plain fork would hand every rank the
caller's memory, every shard in it)."""

from __future__ import annotations

import multiprocessing
import os
import socket
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.distributed as dist

RANK_TIMEOUT_S = 60
os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # one machine: its loopback


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _rank(rank: int, world: int, port: int, job: Callable[[torch.Tensor], Any], values, out):
    shard = torch.tensor(values, dtype=torch.float64)
    try:
        dist.init_process_group(
            "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world
        )
        result = job(shard)
        dist.barrier()  # every rank is done before any tears the group down
        dist.destroy_process_group()
        out.send(("ok", result))
    except BaseException as error:  # reported to the parent, which raises it
        out.send(("error", f"rank {rank}: {type(error).__name__}: {error}"))
    finally:
        out.close()
        os._exit(0)


def run_ranks(job: Callable[[torch.Tensor], Any], shards: Sequence[torch.Tensor]) -> list[Any]:
    """``job(shard)`` on one rank per shard; the ranks' results, in rank order."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["torch", "torch.distributed"])
    port = _free_port()
    pipes, processes = [], []
    for rank, shard in enumerate(shards):
        receive, send = context.Pipe(duplex=False)
        args = (rank, len(shards), port, job, shard.tolist(), send)
        process = context.Process(target=_rank, args=args)
        process.start()
        send.close()
        pipes.append(receive)
        processes.append(process)
    results = []
    for rank, receive in enumerate(pipes):
        try:
            status, value = receive.recv()
        except EOFError:
            raise RuntimeError(f"rank {rank} died before it reported") from None
        if status != "ok":
            raise RuntimeError(value)
        results.append(value)
    for process in processes:
        process.join(RANK_TIMEOUT_S)
    return results


def shards(seed: int, sizes: Sequence[int], scale: float = 1.0) -> list[torch.Tensor]:
    """One shard of per-example losses per rank, with the given sizes."""
    generator = torch.Generator().manual_seed(seed)
    return [torch.rand(size, generator=generator, dtype=torch.float64) * scale for size in sizes]
