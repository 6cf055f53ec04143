#!/usr/bin/env python3
"""PyTorch pipelining twin of project.sh's reference model: samples/s of a GPipe training step.

BLOCKS x (Linear(WIDTH, WIDTH) + ReLU) + Linear(WIDTH, 10), cross-entropy, plain SGD, cut into
one stage per process (blocks split evenly, the head on the last stage) and run by
torch.distributed.pipelining's ScheduleGPipe over gloo. This is the PyTorch pipeline the issue's
reference figures came from. It needs PyTorch 2.4 or later (Debian's 1.13 lacks the package).
Each process is pinned to THREADS cores of its own, as `mpirun --map-by slot:PE=THREADS
--bind-to core` pins mpipe's ranks.

    python3 -m torch.distributed.run --standalone --nproc-per-node K \\
        scripts/bench/pytorch_pipeline.py [--blocks 16] [--width 1024] [--batch 2048] \\
        [--micro-batches 32] [--threads 2] [--steps 3] [--warmup 1]

Rank 0 prints one line:

    pytorch_pipeline stages=4 threads=2 micro_batches=32 ms_per_step=4081.2 samples_per_s=502
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
from torch.distributed.pipelining import PipelineStage, ScheduleGPipe

CLASSES = 10


def stage_module(blocks: int, width: int, stage: int, stages: int) -> torch.nn.Module:
    """The layers of one stage: its share of the blocks, and the head on the last stage."""
    layers: list[torch.nn.Module] = []
    for _ in range(stage * blocks // stages, (stage + 1) * blocks // stages):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    if stage == stages - 1:
        layers.append(torch.nn.Linear(width, CLASSES))
    return torch.nn.Sequential(*layers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=16)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=2048)
    parser.add_argument("--micro-batches", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2, help="OpenMP threads per process")
    parser.add_argument("--steps", type=int, default=3, help="timed steps")
    parser.add_argument("--warmup", type=int, default=1, help="untimed steps first")
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank, stages = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", rank))
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) >= (local + 1) * args.threads:
        os.sched_setaffinity(0, cores[local * args.threads:(local + 1) * args.threads])
    torch.set_num_threads(args.threads)
    torch.manual_seed(1 + rank)

    module = stage_module(args.blocks, args.width, rank, stages)
    stage = PipelineStage(module, rank, stages, torch.device("cpu"))
    schedule = ScheduleGPipe(stage, n_microbatches=args.micro_batches,
                             loss_fn=torch.nn.CrossEntropyLoss())
    optimizer = torch.optim.SGD(module.parameters(), lr=0.01)
    x = torch.randn(args.batch, args.width)  # x: [batch, features]
    y = torch.randint(0, CLASSES, (args.batch,))  # y: [batch]

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        inputs = (x,) if rank == 0 else ()
        if rank == stages - 1:
            schedule.step(*inputs, target=y, losses=[])
        else:
            schedule.step(*inputs)
        optimizer.step()

    for _ in range(args.warmup):
        step()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    dist.barrier()
    seconds = (time.perf_counter() - start) / args.steps
    if rank == 0:
        print(f"pytorch_pipeline stages={stages} threads={args.threads} "
              f"micro_batches={args.micro_batches} ms_per_step={1e3 * seconds:.1f} "
              f"samples_per_s={args.batch / seconds:.0f} torch={torch.__version__}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
