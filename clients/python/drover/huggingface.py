"""drover for the Hugging Face Trainer (transformers is imported when
callback() is called).

    trainer = transformers.Trainer(..., callbacks=[drover.huggingface.callback()])
    trainer.train(resume_from_checkpoint=drover.resume_from())

The callback reports progress (state.global_step / state.max_steps) and
the logged loss at every log step (``logging_steps``); every checkpoint
the Trainer saves (``output_dir/checkpoint-N``) is reported as the job's
checkpoint. On SIGTERM it asks the Trainer to save and stop after the
current step (``control.should_save``, ``should_training_stop``), so the
checkpoint is written and reported inside the grace period when a step is
shorter than it.
"""

import os

import drover


def _callback_base():
    try:
        from transformers import TrainerCallback
    except ImportError as e:
        raise drover.DroverError("drover.huggingface needs transformers: %s" % e) from e
    return TrainerCallback


def callback(metric="loss"):
    """A TrainerCallback reporting to drover; metric is the key of the
    logs to report (``loss``, or ``eval_loss`` with evaluation)."""
    base = _callback_base()

    class DroverCallback(base):
        def __init__(self):
            super().__init__()
            self.preemption = drover.Preemption()
            self.checkpoint = drover.resume_from()
            self.checkpoint_progress = None

        @staticmethod
        def _progress(state):
            if not state.max_steps:
                return 0.0
            return min(1.0, state.global_step / state.max_steps)

        def on_train_begin(self, args, state, control, **kwargs):
            self.preemption.install()
            if self.checkpoint:
                self.checkpoint_progress = self._progress(state)

        def on_step_end(self, args, state, control, **kwargs):
            if self.preemption.requested:
                control.should_save = True
                control.should_training_stop = True
            return control

        def on_save(self, args, state, control, **kwargs):
            path = os.path.join(args.output_dir, "checkpoint-%d" % state.global_step)
            self.checkpoint, self.checkpoint_progress = path, self._progress(state)
            drover.report(self.checkpoint_progress, checkpoint=path, checkpoint_progress=self.checkpoint_progress)
            return control

        def on_log(self, args, state, control, logs=None, **kwargs):
            value = (logs or {}).get(metric)
            drover.report(self._progress(state), metric=value, checkpoint=self.checkpoint,
                          checkpoint_progress=self.checkpoint_progress)
            return control

        def on_train_end(self, args, state, control, **kwargs):
            self.preemption.uninstall()
            return control

    return DroverCallback()
