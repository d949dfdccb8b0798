"""A small real PyTorch training run that drover can preempt, migrate and
resume: a two-layer network fitting a fixed synthetic regression task with
SGD and momentum, on CPU.

Made drover-aware by the lines between the "drover" markers (the snippet
docs/trainer.md shows; a test checks that it is this file's code): the loss
of every step is reported to drover (rate-limited to one report a second),
a checkpoint is written every --checkpoint-every steps and when SIGTERM
arrives, and a restarted replica resumes from the checkpoint drover passes
in DROVER_RESUME_FROM. Batches are drawn from the step number, so a
resumed run sees the same data as an uninterrupted one and its loss curve
continues where it stopped.

Every step is also printed ("step 12 loss 0.4321 t 1764300000.123"), for
the e2e test and the figures.

    PYTHONPATH=clients/python python3 examples/pytorch/train.py --steps 300 --checkpoint-dir /tmp/ckpt
"""

import argparse
import sys
import time

import torch

import drover.pytorch


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=300, help="training steps")
    p.add_argument("--batch", type=int, default=64, help="batch size")
    p.add_argument("--lr", type=float, default=0.05, help="learning rate")
    p.add_argument("--checkpoint-dir", required=True, help="directory for checkpoints (a volume every attempt mounts)")
    p.add_argument("--checkpoint-every", type=int, default=50, help="steps between periodic checkpoints")
    p.add_argument("--step-delay", type=float, default=0.0, help="seconds to sleep after each step (stretches the run for demos and tests)")
    return p.parse_args(argv)


def dataset(n=4096, dim=16, seed=0):
    """A fixed regression task: y = sin(2 x . w1) cos(x . w2) + 0.3 (x . w3)^2 + noise."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, dim, generator=g)
    w1, w2, w3 = (torch.randn(dim, generator=g) / dim**0.5 for _ in range(3))
    y = torch.sin(2 * (x @ w1)) * torch.cos(x @ w2) + 0.3 * (x @ w3) ** 2 + 0.05 * torch.randn(n, generator=g)
    return x, y.unsqueeze(1)


def main(argv):
    args = parse(argv)
    torch.manual_seed(0)
    x_all, y_all = dataset()

    def batch(step):
        idx = torch.randint(len(x_all), (args.batch,), generator=torch.Generator().manual_seed(1000 + step))
        return x_all[idx], y_all[idx]

    model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    # drover: begin
    loop = drover.pytorch.Loop(model, opt, total_steps=args.steps,
                               directory=args.checkpoint_dir,
                               checkpoint_every=args.checkpoint_every)
    # steps() resumes from DROVER_RESUME_FROM; on SIGTERM it writes a
    # checkpoint, reports it and exits.
    for step in loop.steps():
        x, y = batch(step)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        loop.report(loss.item())  # progress and loss to drover
        # drover: end
        print("step %d loss %.6f t %.3f" % (step, loss.item(), time.time()), flush=True)
        if args.step_delay:
            time.sleep(args.step_delay)
    if loop.resumed_from:
        print("resumed from %s" % loop.resumed_from, flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
