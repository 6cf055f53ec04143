#!/usr/bin/python3
"""PyTorch reference for configs/scaling_mlp.yaml: ms/step and samples/s of the same MLP training step.

8 x (Linear(1024, 1024) + ReLU) + Linear(1024, 10), batch 256, cross-entropy, plain SGD, on
one process at each requested thread count. Needs Debian's python3-torch (PyTorch 1.13; run it
with /usr/bin/python3) and libopenblas0-openmp, without which torch uses the slow reference
BLAS. OpenBLAS runs the kernels of OPENBLAS_CORETYPE where it is set (scripts/bench/blas_core.sh
sets it where OpenBLAS does not know the CPU), else those of its own CPU detection.

    /usr/bin/python3 scripts/bench/pytorch_mlp.py [--threads 1 2] [--steps 30] [--warmup 5]

Prints one line per thread count (scripts/bench/twin_timing.py).
"""
from typing import Callable

import torch

import twin_timing  # (after torch, which it imports)

BATCH, WIDTH, DEPTH, CLASSES = 256, 1024, 8, 10


def make_model() -> torch.nn.Module:
    layers = []
    for _ in range(DEPTH):
        layers += [torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU()]
    layers.append(torch.nn.Linear(WIDTH, CLASSES))
    return torch.nn.Sequential(*layers)


def make_step() -> Callable[[], None]:
    """The model, optimizer and data of one training step, and the step."""
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

    return step


if __name__ == "__main__":
    twin_timing.main(__doc__.splitlines()[0],
                     f"{DEPTH} x Linear({WIDTH},{WIDTH})+ReLU + Linear({WIDTH},{CLASSES}), SGD",
                     BATCH, make_step)
