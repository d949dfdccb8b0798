"""drover for PyTorch Lightning (imported when callback() is called).

    trainer = lightning.Trainer(max_steps=1000, callbacks=[drover.lightning.callback("/ckpt")])
    trainer.fit(model, ckpt_path=drover.resume_from())

The callback reports progress (global_step / max_steps, or the estimated
stepping batches) and the training loss (``outputs["loss"]``, else
``callback_metrics[metric]``) after each batch, at most every
report_every seconds; on SIGTERM it saves a checkpoint with
``trainer.save_checkpoint``, reports it, and stops training
(``trainer.should_stop``), so ``fit`` returns and the process exits.
"""

import os
import time

import drover


def _callback_base():
    try:
        from lightning.pytorch import Callback
    except ImportError:
        try:
            from pytorch_lightning import Callback
        except ImportError as e:
            raise drover.DroverError("drover.lightning needs lightning or pytorch_lightning: %s" % e) from e
    return Callback


def _scalar(v):
    if v is None:
        return None
    if hasattr(v, "item"):
        v = v.item()
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def callback(directory, metric="train_loss", report_every=1.0):
    """A Lightning Callback reporting to drover and checkpointing into
    directory on SIGTERM."""
    base = _callback_base()

    class DroverCallback(base):
        def __init__(self):
            super().__init__()
            self.directory = os.fspath(directory)
            self.preemption = drover.Preemption()
            self._last = None
            self.checkpoint = None
            self.checkpoint_progress = None

        def on_train_start(self, trainer, pl_module):
            self.preemption.install()
            self.checkpoint = drover.resume_from()
            if self.checkpoint:
                self.checkpoint_progress = self._progress(trainer)

        def _progress(self, trainer):
            total = trainer.max_steps if trainer.max_steps and trainer.max_steps > 0 else getattr(trainer, "estimated_stepping_batches", 0)
            if not total or total == float("inf"):
                return 0.0
            return min(1.0, trainer.global_step / total)

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            progress = self._progress(trainer)
            if self.preemption.requested:
                os.makedirs(self.directory, exist_ok=True)
                path = os.path.join(self.directory, "step-%d.ckpt" % trainer.global_step)
                trainer.save_checkpoint(path)
                self.checkpoint, self.checkpoint_progress = path, progress
                drover.report(progress, checkpoint=path, checkpoint_progress=progress)
                trainer.should_stop = True
                return
            now = time.monotonic()
            if self._last is not None and now - self._last < report_every:
                return
            self._last = now
            loss = outputs.get("loss") if isinstance(outputs, dict) else outputs
            value = _scalar(loss)
            if value is None:
                value = _scalar(trainer.callback_metrics.get(metric))
            drover.report(progress, metric=value, checkpoint=self.checkpoint, checkpoint_progress=self.checkpoint_progress)

        def on_train_end(self, trainer, pl_module):
            self.preemption.uninstall()

    return DroverCallback()
