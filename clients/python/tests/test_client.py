"""Tests of the drover trainer client against a stub API server (http.server
in a thread). They need only the standard library: torch, Lightning and
transformers are replaced by small fakes where an adapter is tested.

Run: python3 -m unittest discover -s clients/python/tests -t clients/python
"""

import http.server
import json
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import threading
import types
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import drover  # noqa: E402


class Stub:
    """An API server stand-in: records every request; answers with the
    queued (status, body) pairs, then 200 {}."""

    def __init__(self):
        self.requests = []
        self.answers = []
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _serve(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n)
                stub.requests.append((self.command, self.path, dict(self.headers), body))
                code, out = stub.answers.pop(0) if stub.answers else (200, b"{}")
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            do_PATCH = do_GET = do_POST = _serve

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Base(unittest.TestCase):
    def setUp(self):
        self.stub = Stub()
        self.addCleanup(self.stub.close)
        self.dir = tempfile.mkdtemp(prefix="drover-client-test-")
        self.token = os.path.join(self.dir, "token")
        with open(self.token, "w") as f:
            f.write("tok-1\n")
        env = {"DROVER_POD_NAME": "job-a-worker-0-0", "DROVER_POD_NAMESPACE": "team-a",
               "DROVER_RESUME_FROM": "", "DROVER_SERVICEACCOUNT_DIR": self.dir}
        p = mock.patch.dict(os.environ, env)
        p.start()
        self.addCleanup(p.stop)
        # The module-level report() builds its client once: point it at the stub.
        drover._default = drover.Client(server=self.stub.url, token_file=self.token, ca_file="")
        self.addCleanup(setattr, drover, "_default", None)

    def reports(self):
        """The report annotations the stub received, decoded."""
        out = []
        for method, path, headers, body in self.stub.requests:
            self.assertEqual(method, "PATCH")
            self.assertEqual(path, "/api/v1/namespaces/team-a/pods/job-a-worker-0-0")
            self.assertEqual(headers["Content-Type"], "application/merge-patch+json")
            out.append(json.loads(json.loads(body)["metadata"]["annotations"]["drover.dev/report"]))
        return out


class FormatTest(unittest.TestCase):
    """The bytes are Go's report.Patch's (cross-checked against Go itself by
    clients/python/python_test.go)."""

    def test_patch_body(self):
        t = 1767366245_123456789  # 2026-01-02T15:04:05.123456789Z
        cases = [
            ("all fields", dict(progress=0.42, metric=0.31, checkpoint="s3://b/ckpt-420", checkpoint_progress=0.4, time_ns=t),
             r'{"metadata":{"annotations":{"drover.dev/report":"{\"progress\":0.42,\"metric\":0.31,\"checkpoint\":\"s3://b/ckpt-420\",\"checkpointProgress\":0.4,\"time\":\"2026-01-02T15:04:05.123456789Z\"}"}}}'),
            ("progress only, whole second", dict(progress=1, time_ns=1767366245_000000000),
             r'{"metadata":{"annotations":{"drover.dev/report":"{\"progress\":1,\"time\":\"2026-01-02T15:04:05Z\"}"}}}'),
            ("checkpoint holds the progress by default; trailing zeros trimmed", dict(progress=0.5, checkpoint="/c", time_ns=1767366245_100000000),
             r'{"metadata":{"annotations":{"drover.dev/report":"{\"progress\":0.5,\"checkpoint\":\"/c\",\"checkpointProgress\":0.5,\"time\":\"2026-01-02T15:04:05.1Z\"}"}}}'),
            ("tiny and huge metrics in Go's exponent form", dict(progress=0, metric=1.5e-7, time_ns=t),
             r'{"metadata":{"annotations":{"drover.dev/report":"{\"progress\":0,\"metric\":1.5e-7,\"time\":\"2026-01-02T15:04:05.123456789Z\"}"}}}'),
            ("HTML characters escaped as Go does", dict(progress=0.25, checkpoint="s3://b/a&b<c>", time_ns=t),
             r'{"metadata":{"annotations":{"drover.dev/report":"{\"progress\":0.25,\"checkpoint\":\"s3://b/a\\u0026b\\u003cc\\u003e\",\"checkpointProgress\":0.25,\"time\":\"2026-01-02T15:04:05.123456789Z\"}"}}}'),
        ]
        for name, kw, want in cases:
            with self.subTest(name):
                self.assertEqual(drover.patch_body(**kw).decode(), want)

    def test_go_floats(self):
        for f, want in [(0.1, "0.1"), (1.0, "1"), (100.0, "100"), (-0.0, "-0"), (1e-7, "1e-7"), (1e21, "1e+21"),
                        (123456789.125, "123456789.125"), (1e20, "100000000000000000000"), (2.5e-100, "2.5e-100"), (1e-6, "0.000001")]:
            with self.subTest(f):
                self.assertEqual(drover._go_float(f), want)

    def test_bad_values_name_the_field(self):
        cases = [
            (dict(progress=1.5), "progress: 1.5 is not in [0, 1]"),
            (dict(progress=float("nan")), "progress: nan is not in [0, 1]"),
            (dict(progress="0.5"), "progress: '0.5' is not a number"),
            (dict(progress=0.5, metric=float("inf")), "metric: inf is not a finite number"),
            (dict(progress=0.5, checkpoint="/c", checkpoint_progress=-0.1), "checkpointProgress: -0.1 is not in [0, 1]"),
        ]
        for kw, want in cases:
            with self.subTest(want):
                with self.assertRaises(drover.DroverError) as cm:
                    drover.patch_body(**kw)
                self.assertEqual(str(cm.exception), want)


class ReportTest(Base):
    def test_report_patches_its_own_pod(self):
        self.assertTrue(drover.report(0.42, metric=0.31, checkpoint="/ckpt/step-42.pt"))
        (method, path, headers, body), = self.stub.requests
        self.assertEqual(headers["Authorization"], "Bearer tok-1")
        got, = self.reports()
        self.assertEqual({k: got[k] for k in ("progress", "metric", "checkpoint", "checkpointProgress")},
                         {"progress": 0.42, "metric": 0.31, "checkpoint": "/ckpt/step-42.pt", "checkpointProgress": 0.42})
        self.assertRegex(got["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$")

    def test_token_read_for_every_report(self):
        drover.report(0.1)
        with open(self.token, "w") as f:
            f.write("tok-2")
        drover.report(0.2)
        self.assertEqual([h["Authorization"] for _, _, h, _ in self.stub.requests], ["Bearer tok-1", "Bearer tok-2"])

    def test_refusal_carries_the_servers_message(self):
        msg = "ValidatingAdmissionPolicy 'drover-report' denied request: drover.dev/report may be written only by that pod"
        self.stub.answers = [(403, json.dumps({"kind": "Status", "message": msg}).encode())]
        with self.assertRaises(drover.DroverError) as cm:
            drover.report(0.5)
        self.assertEqual(str(cm.exception), "patching pod team-a/job-a-worker-0-0 with its report: 403 " + msg)
        self.assertEqual(len(self.stub.requests), 1, "a refusal is not retried")

    def test_server_errors_retried(self):
        self.stub.answers = [(500, b"{}"), (429, b"{}")]
        drover.report(0.5)
        self.assertEqual(len(self.stub.requests), 3)

    def test_server_errors_give_up(self):
        c = drover.Client(server=self.stub.url, token_file=self.token, ca_file="", retries=1)
        self.stub.answers = [(503, b"{}"), (503, json.dumps({"message": "etcd is down"}).encode())]
        with self.assertRaisesRegex(drover.DroverError, "503 etcd is down"):
            c.report(0.5)

    def test_outside_a_pod_nothing_is_sent(self):
        with mock.patch.dict(os.environ, {"DROVER_POD_NAME": ""}):
            with mock.patch("sys.stderr"):
                self.assertFalse(drover.report(0.5, metric=1.0))
            with self.assertRaisesRegex(drover.DroverError, "progress: 2.0 is not in"):
                drover.report(2)
        self.assertEqual(self.stub.requests, [])

    def test_in_cluster_environment(self):
        ca = os.path.join(self.dir, "ca.crt")
        cases = [("10.96.0.1", "https://10.96.0.1:443"), ("fd00::1", "https://[fd00::1]:443")]
        for host, want in cases:
            with self.subTest(host), mock.patch.dict(os.environ, {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": "443"}):
                with mock.patch("ssl.create_default_context") as ctx:
                    c = drover.Client()
                ctx.assert_called_once_with(cafile=ca)
                self.assertEqual((c.server, c.namespace, c.pod, c.token_file), (want, "team-a", "job-a-worker-0-0", self.token))
        with mock.patch.dict(os.environ, {"KUBERNETES_SERVICE_HOST": "", "KUBERNETES_SERVICE_PORT": ""}):
            with self.assertRaisesRegex(drover.DroverError, "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set"):
                drover.Client()
        with mock.patch.dict(os.environ, {"DROVER_POD_NAMESPACE": ""}):
            with self.assertRaisesRegex(drover.DroverError, "DROVER_POD_NAMESPACE and DROVER_POD_NAME are not set"):
                drover.Client(server=self.stub.url)

    def test_missing_token_named(self):
        c = drover.Client(server=self.stub.url, token_file=os.path.join(self.dir, "nope"), ca_file="")
        with self.assertRaisesRegex(drover.DroverError, "reading the service-account token .*nope"):
            c.report(0.5)

    def test_resume_from(self):
        self.assertIsNone(drover.resume_from())
        with mock.patch.dict(os.environ, {"DROVER_RESUME_FROM": "/ckpt/step-40.pt"}):
            self.assertEqual(drover.resume_from(), "/ckpt/step-40.pt")

    def test_sigterm_checkpoints_and_reports(self):
        calls = []

        def save():
            calls.append("save")
            return "/ckpt/step-7.pt", 0.7
        p = drover.on_sigterm(save)
        self.addCleanup(p.uninstall)
        self.assertFalse(p.requested)
        os.kill(os.getpid(), signal.SIGTERM)
        self.assertTrue(p.requested, "the handler records SIGTERM")
        self.assertEqual(calls, [], "the handler itself does not checkpoint mid-step")
        with self.assertRaises(SystemExit) as cm:
            p.checkpoint_and_exit()
        self.assertEqual(cm.exception.code, 0)
        got, = self.reports()
        self.assertEqual((got["progress"], got["checkpoint"], got["checkpointProgress"]), (0.7, "/ckpt/step-7.pt", 0.7))


class LazyImportTest(unittest.TestCase):
    def test_adapters_import_no_framework(self):
        code = ("import sys, drover, drover.pytorch, drover.lightning, drover.huggingface;"
                "print(sorted(m for m in ('torch', 'lightning', 'pytorch_lightning', 'transformers') if m in sys.modules))")
        out = subprocess.run([sys.executable, "-c", code], cwd=os.path.dirname(HERE), capture_output=True, text=True, check=True)
        self.assertEqual(out.stdout.strip(), "[]")

    def test_missing_framework_named(self):
        import drover.huggingface
        import drover.lightning
        with mock.patch.dict(sys.modules, {"transformers": None, "lightning": None, "lightning.pytorch": None, "pytorch_lightning": None}):
            with self.assertRaisesRegex(drover.DroverError, "drover.huggingface needs transformers"):
                drover.huggingface.callback()
            with self.assertRaisesRegex(drover.DroverError, "drover.lightning needs lightning or pytorch_lightning"):
                drover.lightning.callback("/ckpt")


def fake_torch():
    """torch.save/load by pickle: enough for Loop's bookkeeping."""
    m = types.ModuleType("torch")

    def save(obj, path):
        with open(path, "wb") as f:
            pickle.dump(obj, f)

    def load(path, map_location=None):
        with open(path, "rb") as f:
            return pickle.load(f)
    m.save, m.load = save, load
    return m


class Model:
    def __init__(self):
        self.w = 0

    def state_dict(self):
        return {"w": self.w}

    def load_state_dict(self, s):
        self.w = s["w"]


class PyTorchLoopTest(Base):
    def test_preempted_then_resumed(self):
        import drover.pytorch
        ckdir = os.path.join(self.dir, "ckpt")
        with mock.patch.dict(sys.modules, {"torch": fake_torch()}):
            m, opt = Model(), Model()
            loop = drover.pytorch.Loop(m, opt, total_steps=10, directory=ckdir, checkpoint_every=3, report_every=0)
            self.addCleanup(loop.preemption.uninstall)
            seen = []
            with self.assertRaises(SystemExit):
                for step in loop.steps():
                    seen.append(step)
                    m.w += 1
                    loop.report(metric=10 - step)
                    if step == 4:
                        os.kill(os.getpid(), signal.SIGTERM)
            self.assertEqual(seen, [0, 1, 2, 3, 4], "the loop stops after the step SIGTERM arrived in")
            reps = self.reports()
            self.assertEqual(reps[-1]["checkpoint"], os.path.join(ckdir, "step-5.pt"))
            self.assertEqual(reps[-1]["checkpointProgress"], 0.5)
            # The periodic checkpoint at step 3 was reported with its progress.
            self.assertIn({"checkpoint": os.path.join(ckdir, "step-3.pt"), "checkpointProgress": 0.3},
                          [{"checkpoint": r.get("checkpoint"), "checkpointProgress": r.get("checkpointProgress")} for r in reps])
            self.assertEqual([r["metric"] for r in reps if "metric" in r], [10, 9, 8, 7, 6])

            # The next attempt: drover passes the checkpoint back.
            self.stub.requests.clear()
            with mock.patch.dict(os.environ, {"DROVER_RESUME_FROM": reps[-1]["checkpoint"]}):
                m2, opt2 = Model(), Model()
                loop2 = drover.pytorch.Loop(m2, opt2, total_steps=10, directory=ckdir, checkpoint_every=3, report_every=0)
                self.addCleanup(loop2.preemption.uninstall)
                seen = []
                for step in loop2.steps():
                    seen.append(step)
                    loop2.report(metric=10 - step)
            self.assertEqual(seen, [5, 6, 7, 8, 9])
            self.assertEqual(m2.w, 5, "model state restored")
            reps = self.reports()
            self.assertEqual(reps[0]["progress"], 0.6)
            self.assertEqual(reps[-1]["progress"], 1)
            self.assertEqual(reps[0]["checkpoint"], os.path.join(ckdir, "step-5.pt"))

    def test_bad_total_steps(self):
        import drover.pytorch
        with mock.patch.dict(sys.modules, {"torch": fake_torch()}):
            with self.assertRaisesRegex(drover.DroverError, "total_steps: 0 must be positive"):
                drover.pytorch.Loop(Model(), None, total_steps=0, directory=self.dir)


class FakeLightningTrainer:
    def __init__(self):
        self.max_steps, self.global_step, self.should_stop = 100, 0, False
        self.callback_metrics = {}
        self.saved = []

    def save_checkpoint(self, path):
        self.saved.append(path)


class LightningTest(Base):
    def test_reports_and_checkpoints_on_sigterm(self):
        import drover.lightning
        pkg, mod = types.ModuleType("lightning"), types.ModuleType("lightning.pytorch")
        mod.Callback = type("Callback", (), {})
        pkg.pytorch = mod
        with mock.patch.dict(sys.modules, {"lightning": pkg, "lightning.pytorch": mod}):
            cb = drover.lightning.callback(os.path.join(self.dir, "ckpt"), report_every=0)
        self.assertIsInstance(cb, mod.Callback)
        tr = FakeLightningTrainer()
        cb.on_train_start(tr, None)
        self.addCleanup(cb.preemption.uninstall)
        tr.global_step = 10
        cb.on_train_batch_end(tr, None, {"loss": 0.75}, None, 9)
        tr.global_step = 11
        tr.callback_metrics["train_loss"] = 0.5
        cb.on_train_batch_end(tr, None, None, None, 10)
        os.kill(os.getpid(), signal.SIGTERM)
        tr.global_step = 12
        cb.on_train_batch_end(tr, None, {"loss": 0.4}, None, 11)
        path = os.path.join(self.dir, "ckpt", "step-12.ckpt")
        self.assertEqual((tr.saved, tr.should_stop), ([path], True))
        got = [(r["progress"], r.get("metric"), r.get("checkpoint")) for r in self.reports()]
        self.assertEqual(got, [(0.1, 0.75, None), (0.11, 0.5, None), (0.12, None, path)])


class HuggingFaceTest(Base):
    def test_reports_logs_and_saves(self):
        import drover.huggingface
        tf = types.ModuleType("transformers")
        tf.TrainerCallback = type("TrainerCallback", (), {})
        with mock.patch.dict(sys.modules, {"transformers": tf}):
            cb = drover.huggingface.callback()
        self.assertIsInstance(cb, tf.TrainerCallback)
        args = types.SimpleNamespace(output_dir="/out")
        state = types.SimpleNamespace(global_step=0, max_steps=200)
        control = types.SimpleNamespace(should_save=False, should_training_stop=False)
        cb.on_train_begin(args, state, control)
        self.addCleanup(cb.preemption.uninstall)
        state.global_step = 50
        cb.on_log(args, state, control, logs={"loss": 1.25, "learning_rate": 0.001})
        cb.on_step_end(args, state, control)
        self.assertFalse(control.should_save)
        os.kill(os.getpid(), signal.SIGTERM)
        state.global_step = 51
        cb.on_step_end(args, state, control)
        self.assertTrue(control.should_save and control.should_training_stop, "SIGTERM asks the Trainer to save and stop")
        cb.on_save(args, state, control)
        got = [(r["progress"], r.get("metric"), r.get("checkpoint")) for r in self.reports()]
        self.assertEqual(got, [(0.25, 1.25, None), (0.255, None, "/out/checkpoint-51")])


if __name__ == "__main__":
    unittest.main()
