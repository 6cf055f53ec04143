#!/usr/bin/python3
"""PyTorch reference for configs/scaling_mlp.yaml: ms/step and samples/s of the same MLP training step.

8 x (Linear(1024, 1024) + ReLU) + Linear(1024, 10), batch 256, cross-entropy, plain SGD, on
one process at each requested thread count. Needs Debian's python3-torch (PyTorch 1.13; run it
with /usr/bin/python3) and libopenblas0-openmp, without which torch uses the slow reference
BLAS. OPENBLAS_CORETYPE is removed from the environment before torch loads OpenBLAS (its own
CPU detection is fastest here).

    /usr/bin/python3 scripts/bench/pytorch_mlp.py [--threads 1 2] [--steps 30] [--warmup 5]

Prints one line per thread count (cpu_ms_per_step: the process's CPU time, all threads):
    pytorch threads=1 ms_per_step=123.4 samples_per_s=2075 cpu_ms_per_step=123.0
"""
import argparse
import os
import time

os.environ.pop("OPENBLAS_CORETYPE", None)  # must happen before OpenBLAS is loaded

import torch  # noqa: E402

BATCH, WIDTH, DEPTH, CLASSES = 256, 1024, 8, 10


def make_model() -> torch.nn.Module:
    layers = []
    for _ in range(DEPTH):
        layers += [torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU()]
    layers.append(torch.nn.Linear(WIDTH, CLASSES))
    return torch.nn.Sequential(*layers)


def seconds_per_step(threads: int, steps: int, warmup: int) -> tuple[float, float]:
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randn(BATCH, WIDTH)  # x: [batch, features]
    y = torch.randint(0, CLASSES, (BATCH,))  # y: [batch]

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()

    for _ in range(warmup):
        step()
    start, start_cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        step()
    return (time.perf_counter() - start) / steps, (time.process_time() - start_cpu) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--steps", type=int, default=30, help="timed steps")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    args = parser.parse_args()
    torch.ones(2, 2) @ torch.ones(2, 2)  # loads the BLAS library
    with open("/proc/self/maps") as f:
        blas = sorted({line.split()[-1] for line in f if "blas" in line.split()[-1]})
    print(f"# torch {torch.__version__}, BLAS {' '.join(blas) or '?'}, batch {BATCH}, "
          f"{DEPTH} x Linear({WIDTH},{WIDTH})+ReLU + Linear({WIDTH},{CLASSES}), SGD")
    for threads in args.threads:
        s, cpu = seconds_per_step(threads, args.steps, args.warmup)
        print(f"pytorch threads={threads} ms_per_step={1e3 * s:.1f} "
              f"samples_per_s={BATCH / s:.0f} cpu_ms_per_step={1e3 * cpu:.1f}", flush=True)


if __name__ == "__main__":
    main()
