"""Timing shared by the PyTorch twins (pytorch_mlp.py, pytorch_transformer.py, pytorch_gpt_kjv.py,
pytorch_translate.py):
one training step timed over `steps` after `warmup` untimed ones, one printed line per thread
count:

    pytorch threads=1 ms_per_step=123.4 samples_per_s=2075.3 cpu_ms_per_step=123.0

(cpu_ms_per_step: the process's CPU time, all threads). A twin imports torch before it imports
this module.
"""
import argparse
import time
from typing import Callable, Optional

import torch


def seconds_per_step(step: Callable[[], None], steps: int, warmup: int) -> tuple[float, float]:
    """Wall and CPU seconds per call of `step`, after `warmup` untimed calls."""
    for _ in range(warmup):
        step()
    start, start_cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        step()
    return (time.perf_counter() - start) / steps, (time.process_time() - start_cpu) / steps


def language_model_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, vocab: int,
                        batch: int, seq: int) -> Callable[[], None]:
    """One training step of a language model on fixed random tokens [batch, seq] (the step's cost
    does not depend on them): cross-entropy over every position, gradient clipping at norm 1.0."""
    ids = torch.randint(0, vocab, (batch, seq))
    targets = torch.randint(0, vocab, (batch, seq))

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        logits = model(ids)
        loss = torch.nn.functional.cross_entropy(logits.view(-1, vocab), targets.view(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()

    return step


def main(description: str, model_text: str, batch: int, make_step: Callable[..., Callable[[], None]],
         add_arguments: Optional[Callable[[argparse.ArgumentParser], None]] = None) -> None:
    """Parses --threads/--steps/--warmup and prints the header and one line per thread count.
    make_step() builds the model (after the thread count and seed are set) and returns its step;
    with add_arguments (which adds a twin's own options), make_step(args) gets the parsed ones."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--steps", type=int, default=30, help="timed steps")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    if add_arguments:
        add_arguments(parser)
    args = parser.parse_args()
    torch.ones(2, 2) @ torch.ones(2, 2)  # loads the BLAS library
    with open("/proc/self/maps") as f:
        blas = sorted({line.split()[-1] for line in f if "blas" in line.split()[-1]})
    print(f"# torch {torch.__version__}, BLAS {' '.join(blas) or '?'}, batch {batch}, {model_text}")
    for threads in args.threads:
        torch.set_num_threads(threads)
        torch.manual_seed(1)
        step = make_step(args) if add_arguments else make_step()
        s, cpu = seconds_per_step(step, args.steps, args.warmup)
        print(f"pytorch threads={threads} ms_per_step={1e3 * s:.1f} "
              f"samples_per_s={batch / s:.1f} cpu_ms_per_step={1e3 * cpu:.1f}", flush=True)
