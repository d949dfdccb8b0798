"""drover for a plain PyTorch training loop (torch is imported when a Loop
is made, not when drover is).

    loop = drover.pytorch.Loop(model, optimizer, total_steps=1000, directory="/ckpt")
    for step in loop.steps():   # starts after the checkpoint in DROVER_RESUME_FROM
        loss = train_step(step)
        loop.report(loss.item())

Every ``checkpoint_every`` steps, and when SIGTERM arrives (drover
preempts or migrates the job), the loop saves the model and optimizer
state and the step to ``directory/step-N.pt`` and reports it as the job's
checkpoint; after the SIGTERM checkpoint, ``steps()`` exits the process
(SystemExit(0)), inside the grace period when one step is shorter than it.
"""

import os
import time

import drover


class Loop:
    """Checkpoints, resumes and reports one training loop.

    total_steps is the length of training (progress = steps done /
    total_steps); directory must outlive the pod (a volume every attempt
    mounts), as drover hands the checkpoint's path to the next attempt.
    Reports are sent at most every report_every seconds (and always with a
    checkpoint); ``extra`` is a callable returning more state to save (and
    ``restore(extra)`` on resume), e.g. a data loader's position."""

    def __init__(self, model, optimizer, total_steps, directory, checkpoint_every=100, report_every=1.0, extra=None, restore=None, keep=2):
        import torch  # lazily: drover itself does not need torch

        if total_steps <= 0:
            raise drover.DroverError("total_steps: %r must be positive" % (total_steps,))
        self._torch = torch
        self.model, self.optimizer = model, optimizer
        self.total_steps = int(total_steps)
        self.directory = os.fspath(directory)
        self.checkpoint_every = checkpoint_every
        self.report_every = report_every
        self.extra, self.restore = extra, restore
        self.keep = keep
        self.step = 0  # steps done
        self.resumed_from = None
        self.last_checkpoint = None
        self._saved_progress = None  # progress held by last_checkpoint
        self._last_report = None
        self._saved = []
        self.preemption = drover.on_sigterm(self._checkpoint_now)

    def resume(self):
        """Loads DROVER_RESUME_FROM when set and returns the steps done
        (0 on a first start). steps() calls it."""
        path = drover.resume_from()
        if not path:
            return self.step
        state = self._torch.load(path, map_location="cpu")
        self.model.load_state_dict(state["model"])
        if self.optimizer is not None and state.get("optimizer") is not None:
            self.optimizer.load_state_dict(state["optimizer"])
        if self.restore is not None:
            self.restore(state.get("extra"))
        self.step = int(state["step"])
        self.resumed_from = path
        self.last_checkpoint = path
        self._saved_progress = self.progress()
        return self.step

    def steps(self):
        """Yields the step numbers still to run, from the resumed one.
        After each step: a periodic checkpoint when due; on SIGTERM, a
        checkpoint, its report, and SystemExit(0)."""
        start = self.resume()
        for step in range(start, self.total_steps):
            yield step
            self.step = step + 1
            if self.preemption.requested:
                self.preemption.checkpoint_and_exit(0)
            if self.checkpoint_every and self.step % self.checkpoint_every == 0 and self.step < self.total_steps:
                path = self.save()
                drover.report(self.progress(), checkpoint=path)
        self.preemption.uninstall()

    def progress(self):
        return min(1.0, self.step / self.total_steps)

    def report(self, metric=None):
        """Reports progress and the metric (rate-limited to one report per
        report_every seconds, and the last step)."""
        now = time.monotonic()
        last = self.step + 1 >= self.total_steps
        if self._last_report is not None and now - self._last_report < self.report_every and not last:
            return False
        self._last_report = now
        # The step being reported has run: its progress counts.
        p = min(1.0, (self.step + 1) / self.total_steps)
        return drover.report(p, metric=metric, checkpoint=self.last_checkpoint,
                             checkpoint_progress=self._ckpt_progress())

    def _ckpt_progress(self):
        if not self.last_checkpoint:
            return None
        return self._saved_progress

    def save(self):
        """Writes a checkpoint of the steps done (atomically: a temporary
        file renamed) and returns its path."""
        os.makedirs(self.directory, exist_ok=True)
        path = os.path.join(self.directory, "step-%d.pt" % self.step)
        tmp = path + ".tmp"
        state = {"model": self.model.state_dict(), "step": self.step,
                 "optimizer": self.optimizer.state_dict() if self.optimizer is not None else None,
                 "extra": self.extra() if self.extra is not None else None}
        self._torch.save(state, tmp)
        os.replace(tmp, path)
        self.last_checkpoint = path
        self._saved_progress = self.progress()
        if path not in self._saved:
            self._saved.append(path)
        while self.keep and len(self._saved) > self.keep:
            old = self._saved.pop(0)
            try:
                os.remove(old)
            except OSError:
                pass
        return path

    def _checkpoint_now(self):
        path = self.save()
        return path, self.progress()
