"""drover's trainer client: report progress, a metric and checkpoints to the
drover scheduler from inside a replica pod, checkpoint on SIGTERM, and
resume from the checkpoint drover hands back.

It writes exactly what ``drover report`` (internal/cli) and Go's
``report.Send`` (pkg/k8s/report) write: one JSON merge PATCH of the calling
pod (``PATCH /api/v1/namespaces/NS/pods/POD``, ``Content-Type:
application/merge-patch+json``) that sets the ``drover.dev/report``
annotation to::

    {"progress":0.42,"metric":0.31,"checkpoint":"/ckpt/step-420.pt","checkpointProgress":0.42,"time":"2026-01-02T15:04:05.123456789Z"}

The scheduler copies the newest report into the TrainingJob's
``status.progress`` and ``status.evals``. The chart's admission policy
accepts the annotation only from the pod itself, so the request carries the
pod's own projected service-account token (bound to the pod); only the
standard library is used (urllib, ssl, json).

In a pod drover created, ``DROVER_POD_NAME``, ``DROVER_POD_NAMESPACE`` and
``DROVER_RESUME_FROM`` are set, and the API server is found from
``KUBERNETES_SERVICE_HOST`` and ``KUBERNETES_SERVICE_PORT``. Outside such a
pod (a laptop run) the module-level :func:`report` does nothing, so a
drover-aware script still runs anywhere.

Adapters, which import their framework only when used:
``drover.pytorch.Loop`` (a plain PyTorch loop), ``drover.lightning.callback``
(PyTorch Lightning) and ``drover.huggingface.callback`` (Hugging Face
``Trainer``).
"""

import json
import math
import os
import signal
import ssl
import sys
import threading
import time
import urllib.error
import urllib.request
from decimal import Decimal

__all__ = [
    "ANNOTATION_REPORT",
    "Client",
    "DroverError",
    "Preemption",
    "enabled",
    "format_time",
    "on_sigterm",
    "patch_body",
    "report",
    "resume_from",
]

# The pod annotation a trainer writes (v1alpha1.AnnotationReport).
ANNOTATION_REPORT = "drover.dev/report"

# Environment variables drover sets in every replica container
# (pkg/k8s/report: EnvPodName, EnvPodNamespace, EnvResumeFrom).
ENV_POD_NAME = "DROVER_POD_NAME"
ENV_POD_NAMESPACE = "DROVER_POD_NAMESPACE"
ENV_RESUME_FROM = "DROVER_RESUME_FROM"

# Where the kubelet mounts the pod's projected service-account token and the
# cluster's CA. DROVER_SERVICEACCOUNT_DIR overrides it (tests, and stand-in
# kubelets that run replicas as local processes).
SERVICEACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
ENV_SERVICEACCOUNT_DIR = "DROVER_SERVICEACCOUNT_DIR"


class DroverError(Exception):
    """A report that could not be made: bad values, not in a drover pod, or
    the API server refused it (the message names the pod and the field or
    the server's reason)."""


def enabled():
    """True when running in a replica pod drover created (DROVER_POD_NAME
    and DROVER_POD_NAMESPACE are set)."""
    return bool(os.environ.get(ENV_POD_NAME) and os.environ.get(ENV_POD_NAMESPACE))


def resume_from():
    """The checkpoint to resume from (DROVER_RESUME_FROM), or None on a
    first start. drover sets it on replicas it recreates after a
    preemption or migration to the last checkpoint the job reported."""
    return os.environ.get(ENV_RESUME_FROM) or None


def format_time(ns):
    """RFC 3339 in UTC with nanoseconds, trailing zeros trimmed, as Go's
    time.Time marshals (and v1alpha1.ReportTime keeps): ns since the epoch
    -> "2026-01-02T15:04:05.1234Z"."""
    sec, frac = divmod(ns, 1_000_000_000)
    s = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec))
    if frac:
        s += "." + ("%09d" % frac).rstrip("0")
    return s + "Z"


def _go_float(f):
    # encoding/json's float64 format: the shortest decimal that round-trips,
    # plain notation unless |f| < 1e-6 or >= 1e21, exponents without a
    # leading zero ("1e-7", not "1e-07").
    a = abs(f)
    if a != 0 and (a < 1e-6 or a >= 1e21):
        s = repr(float(f))
        if len(s) >= 4 and s[-4:-1] == "e-0":
            s = s[:-2] + s[-1]
        return s
    return format(Decimal(repr(float(f))).normalize(), "f")


def _go_string(s):
    # encoding/json's string format: UTF-8 kept, <, > and & escaped for
    # HTML, U+2028 and U+2029 escaped, control characters as \n, \b, \u001f.
    out = json.dumps(s, ensure_ascii=False)
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        out = out.replace(ch, esc)
    return out


def _number(name, v):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise DroverError("%s: %r is not a number" % (name, v))
    try:
        return float(v)
    except (OverflowError, ValueError) as e:
        raise DroverError("%s: %r is not a finite number" % (name, v)) from e


def report_json(progress, metric=None, checkpoint=None, checkpoint_progress=None, time_ns=None):
    """The annotation's value, byte for byte what Go's report.Patch puts in
    it (field order, number and time format). Checks the fields as
    report.Report.Validate does; errors name the field."""
    progress = _number("progress", progress)
    if math.isnan(progress) or progress < 0 or progress > 1:
        raise DroverError("progress: %s is not in [0, 1]" % progress)
    parts = ['"progress":' + _go_float(progress)]
    if metric is not None:
        metric = _number("metric", metric)
        if math.isnan(metric) or math.isinf(metric):
            raise DroverError("metric: %s is not a finite number" % metric)
        parts.append('"metric":' + _go_float(metric))
    if checkpoint:
        if not isinstance(checkpoint, str):
            checkpoint = os.fspath(checkpoint)
        parts.append('"checkpoint":' + _go_string(checkpoint))
        # drover report's default: the checkpoint holds the progress reported.
        if checkpoint_progress is None:
            checkpoint_progress = progress
    if checkpoint_progress is not None:
        cp = _number("checkpointProgress", checkpoint_progress)
        if math.isnan(cp) or cp < 0 or cp > 1:
            raise DroverError("checkpointProgress: %s is not in [0, 1]" % cp)
        if cp != 0:
            parts.append('"checkpointProgress":' + _go_float(cp))
    if time_ns is None:
        time_ns = time.time_ns()
    parts.append('"time":' + _go_string(format_time(time_ns)))
    return "{" + ",".join(parts) + "}"


def patch_body(progress, metric=None, checkpoint=None, checkpoint_progress=None, time_ns=None):
    """The merge patch that sets the report on a pod, as bytes: what Go's
    report.Patch returns for the same report."""
    value = report_json(progress, metric, checkpoint, checkpoint_progress, time_ns)
    return ('{"metadata":{"annotations":{' + _go_string(ANNOTATION_REPORT) + ":" + _go_string(value) + "}}}").encode("utf-8")


class Client:
    """Reports for one pod through the API server.

    The defaults are the in-cluster ones: the server from
    KUBERNETES_SERVICE_HOST/PORT, the pod's projected token and CA from the
    service-account directory (the token is read again for every report,
    as the kubelet rotates it), the pod from DROVER_POD_NAME and
    DROVER_POD_NAMESPACE. Raises DroverError naming what is missing.
    """

    def __init__(self, server=None, namespace=None, pod=None, token_file=None, ca_file=None, timeout=10.0, retries=3):
        sa_dir = os.environ.get(ENV_SERVICEACCOUNT_DIR) or SERVICEACCOUNT_DIR
        if server is None:
            host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT")
            if not host or not port:
                raise DroverError("KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set: not in a pod (pass server=)")
            if ":" in host:
                host = "[" + host + "]"
            server = "https://%s:%s" % (host, port)
        self.server = server.rstrip("/")
        self.namespace = namespace or os.environ.get(ENV_POD_NAMESPACE)
        self.pod = pod or os.environ.get(ENV_POD_NAME)
        if not self.namespace or not self.pod:
            raise DroverError("%s and %s are not set: not in a drover replica pod (pass namespace= and pod=)" % (ENV_POD_NAMESPACE, ENV_POD_NAME))
        self.token_file = token_file or os.path.join(sa_dir, "token")
        self.ca_file = ca_file if ca_file is not None else os.path.join(sa_dir, "ca.crt")
        self.timeout = timeout
        self.retries = retries
        self._ssl = None
        if self.server.startswith("https://"):
            try:
                self._ssl = ssl.create_default_context(cafile=self.ca_file or None)
            except (OSError, ssl.SSLError) as e:
                raise DroverError("reading the cluster CA %s: %s" % (self.ca_file, e)) from e

    def _token(self):
        try:
            with open(self.token_file, encoding="utf-8") as f:
                return f.read().strip()
        except OSError as e:
            raise DroverError("reading the service-account token %s: %s" % (self.token_file, e)) from e

    def report(self, progress, metric=None, checkpoint=None, checkpoint_progress=None, time_ns=None):
        """Writes one report on the pod (a merge patch: never conflicts with
        the scheduler). Server errors (5xx, 429) and connection errors are
        retried; other refusals raise DroverError with the server's
        message (a 403 from the report policy means the token is not
        bound to this pod)."""
        body = patch_body(progress, metric, checkpoint, checkpoint_progress, time_ns)
        url = "%s/api/v1/namespaces/%s/pods/%s" % (self.server, self.namespace, self.pod)
        what = "patching pod %s/%s with its report" % (self.namespace, self.pod)
        delay = 0.2
        for attempt in range(self.retries + 1):
            req = urllib.request.Request(url, data=body, method="PATCH", headers={
                "Content-Type": "application/merge-patch+json",
                "Accept": "application/json",
                "Authorization": "Bearer " + self._token(),
                "User-Agent": "drover-python-client",
            })
            try:
                with urllib.request.urlopen(req, timeout=self.timeout, context=self._ssl) as resp:
                    resp.read()
                    return
            except urllib.error.HTTPError as e:
                msg = _status_message(e)
                if (e.code >= 500 or e.code == 429) and attempt < self.retries:
                    time.sleep(delay)
                    delay *= 2
                    continue
                raise DroverError("%s: %d %s" % (what, e.code, msg)) from e
            except (urllib.error.URLError, OSError) as e:
                if attempt < self.retries:
                    time.sleep(delay)
                    delay *= 2
                    continue
                raise DroverError("%s: %s" % (what, getattr(e, "reason", e))) from e


def _status_message(e):
    try:
        st = json.loads(e.read().decode("utf-8", "replace"))
        return st.get("message") or e.reason
    except (ValueError, OSError, AttributeError):
        return e.reason


_default = None
_default_lock = threading.Lock()
_warned = False


def report(progress, metric=None, checkpoint=None, checkpoint_progress=None):
    """Reports progress (the fraction of training done, in [0, 1]), the
    job's metric (spec.progress.metric, e.g. the loss) and the last
    checkpoint (a path or URL the trainer can restore from, and the
    progress it holds; default: progress) for the calling pod.

    Returns True when reported, False outside a drover pod (nothing is
    sent; one note on stderr). Raises DroverError on bad values or when
    the API server refuses the report."""
    global _default, _warned
    if not enabled():
        report_json(progress, metric, checkpoint, checkpoint_progress)  # still check the values
        if not _warned:
            _warned = True
            print("drover: %s is not set: not in a drover pod, reports are not sent" % ENV_POD_NAME, file=sys.stderr)
        return False
    with _default_lock:
        if _default is None:
            _default = Client()
        c = _default
    c.report(progress, metric, checkpoint, checkpoint_progress)
    return True


class Preemption:
    """A SIGTERM latch. drover preempts or migrates a job by deleting its
    pods with the job's grace period: the kubelet sends SIGTERM, and after
    the grace period SIGKILL. The handler only records the signal (a
    training step is not interrupted half done); the training loop checks
    ``requested`` at step boundaries, checkpoints, reports the checkpoint
    and exits, inside the grace period when a step is shorter than it.

    ``checkpoint``, when given, is called by :meth:`checkpoint_and_exit`:
    it writes a checkpoint and returns ``(path, progress)``."""

    def __init__(self, checkpoint=None):
        self.checkpoint = checkpoint
        self.requested = False
        self.at = None  # time.monotonic() of the first SIGTERM
        self._previous = None

    def install(self):
        """Installs the handler (main thread only, as Python requires)."""
        self._previous = signal.signal(signal.SIGTERM, self._handle)
        return self

    def uninstall(self):
        if self._previous is not None:
            signal.signal(signal.SIGTERM, self._previous)
            self._previous = None

    def _handle(self, signum, frame):
        if not self.requested:
            self.requested = True
            self.at = time.monotonic()

    def checkpoint_and_exit(self, code=0):
        """Calls the checkpoint function, reports its checkpoint, and exits
        the process with code (SystemExit)."""
        if self.checkpoint is not None:
            path, progress = self.checkpoint()
            report(progress, checkpoint=path, checkpoint_progress=progress)
        raise SystemExit(code)


def on_sigterm(checkpoint=None):
    """Installs and returns a :class:`Preemption` latch for SIGTERM."""
    return Preemption(checkpoint).install()
