package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-sched/drover/internal/standin"
	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/chart"
	"github.com/drover-sched/drover/pkg/k8s"
	"github.com/drover-sched/drover/pkg/specon"
)

// repoRoot is the repository's root, from this package's directory.
var repoRoot, _ = filepath.Abs(filepath.Join("..", "..", ".."))

// torchPython returns a python3 that imports torch ($DROVER_PYTHON, the
// python3 on PATH, Debian's /usr/bin/python3), or skips the test.
func torchPython(t *testing.T) string {
	t.Helper()
	var tried []string
	for _, c := range []string{os.Getenv("DROVER_PYTHON"), "python3", "/usr/bin/python3"} {
		if c == "" {
			continue
		}
		p, err := exec.LookPath(c)
		if err != nil {
			continue
		}
		if slices.Contains(tried, p) {
			continue
		}
		tried = append(tried, p)
		if exec.Command(p, "-c", "import torch").Run() == nil {
			return p
		}
	}
	skipUnlessCI(t, "SKIP: no python3 with torch importable (tried %v): install Debian's python3-torch (`apt-get install -y python3-torch`, as .ci/run does) or set DROVER_PYTHON", tried)
	return ""
}

// proc is one replica container run as a local process.
type proc struct {
	pod       string
	uid       types.UID
	log       string
	cmd       *exec.Cmd
	started   time.Time
	sigterm   time.Time // when SIGTERM was sent
	exited    chan struct{}
	exitedAt  time.Time
	exitCode  int
	resume    string // DROVER_RESUME_FROM it got
	finalized bool   // pod status or deletion written after exit
}

// procKubelet is a kubelet for one node that runs each pod's first
// container as a local process: the container's command and args, its
// env (values and the metadata.name/namespace field refs drover sets),
// and what a kubelet mounts: a service-account token from the TokenRequest
// API bound to the pod, the cluster CA, and KUBERNETES_SERVICE_HOST/PORT.
// A deleted pod's process gets SIGTERM, and SIGKILL when the pod's grace
// period ends; once it exited the pod object is removed (zero-grace
// delete). A process that exits by itself completes its pod (Succeeded
// on 0, else Failed).
type procKubelet struct {
	t    *testing.T
	ns   string
	node string
	dir  string
	host string
	port string

	mu    sync.Mutex
	procs map[types.UID]*proc
	order []*proc
}

func newProcKubelet(t *testing.T, ns, node string) *procKubelet {
	u, err := url.Parse(restCfg.Host)
	if err != nil {
		t.Fatalf("API server address %q: %v", restCfg.Host, err)
	}
	return &procKubelet{t: t, ns: ns, node: node, dir: t.TempDir(), host: u.Hostname(), port: u.Port(), procs: map[types.UID]*proc{}}
}

func (k *procKubelet) run(ctx context.Context) {
	for ctx.Err() == nil {
		if err := k.step(ctx); err != nil && ctx.Err() == nil {
			k.t.Logf("proc kubelet: %v", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// sigtermAt is when the kubelet sent the process SIGTERM (zero: never).
func (k *procKubelet) sigtermAt(p *proc) time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return p.sigterm
}

// stop kills every process still running.
func (k *procKubelet) stop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, p := range k.order {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	}
}

func (k *procKubelet) procList() []*proc {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.order)
}

func (k *procKubelet) step(ctx context.Context) error {
	var pods corev1.PodList
	if err := cl.List(ctx, &pods, client.InNamespace(k.ns)); err != nil {
		return err
	}
	zero := int64(0)
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.Spec.NodeName != k.node {
			continue
		}
		k.mu.Lock()
		pr := k.procs[pod.UID]
		k.mu.Unlock()
		exited := false
		if pr != nil {
			select {
			case <-pr.exited:
				exited = true
			default:
			}
		}
		switch {
		case pod.DeletionTimestamp != nil:
			if pr != nil && !exited {
				k.mu.Lock()
				first := pr.sigterm.IsZero()
				if first {
					pr.sigterm = time.Now()
				}
				k.mu.Unlock()
				if first {
					_ = pr.cmd.Process.Signal(syscall.SIGTERM)
				} else if time.Now().After(pod.DeletionTimestamp.Time) {
					_ = pr.cmd.Process.Kill()
				}
				continue
			}
			if err := cl.Delete(ctx, pod, &client.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("removing pod %s: %w", pod.Name, err)
			}
		case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		case pr == nil:
			if err := k.start(ctx, pod); err != nil {
				return err
			}
		case exited && !pr.finalized:
			if err := k.finish(ctx, pod, pr); err != nil {
				return err
			}
		}
	}
	return nil
}

// start requests the pod's token, starts its process and moves the pod to
// Running.
func (k *procKubelet) start(ctx context.Context, pod *corev1.Pod) error {
	c := pod.Spec.Containers[0]
	saDir := filepath.Join(k.dir, pod.Name+"-"+string(pod.UID))
	if err := os.MkdirAll(saDir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(saDir, "ca.crt"), restCfg.CAData, 0o600); err != nil {
		return err
	}
	// A pod-bound token for the pod's service account (envtest runs no
	// ServiceAccount admission, so a pod without one gets none).
	if sa := pod.Spec.ServiceAccountName; sa != "" {
		exp := int64(3600)
		tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp,
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}}}
		if err := cl.SubResource("token").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: pod.Namespace}}, tr); err != nil {
			return fmt.Errorf("TokenRequest for pod %s (service account %s): %w", pod.Name, sa, err)
		}
		if err := os.WriteFile(filepath.Join(saDir, "token"), []byte(tr.Status.Token), 0o600); err != nil {
			return err
		}
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + saDir, "PYTHONDONTWRITEBYTECODE=1",
		"KUBERNETES_SERVICE_HOST=" + k.host, "KUBERNETES_SERVICE_PORT=" + k.port, "DROVER_SERVICEACCOUNT_DIR=" + saDir}
	pr := &proc{pod: pod.Name, uid: pod.UID, log: filepath.Join(k.dir, pod.Name+"-"+string(pod.UID)+".log"), exited: make(chan struct{})}
	for _, e := range c.Env {
		v := e.Value
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			switch e.ValueFrom.FieldRef.FieldPath {
			case "metadata.name":
				v = pod.Name
			case "metadata.namespace":
				v = pod.Namespace
			default:
				return fmt.Errorf("pod %s: env %s: field %s is not supported here", pod.Name, e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
		}
		if e.Name == "DROVER_RESUME_FROM" {
			pr.resume = v
		}
		env = append(env, e.Name+"="+v)
	}
	argv := append(slices.Clone(c.Command), c.Args...)
	out, err := os.Create(pr.log)
	if err != nil {
		return err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = repoRoot, env, out, out
	pr.cmd = cmd
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("starting pod %s's process %v: %w", pod.Name, argv, err)
	}
	pr.started = time.Now()
	go func() {
		err := cmd.Wait()
		out.Close()
		pr.exitedAt = time.Now()
		pr.exitCode = cmd.ProcessState.ExitCode()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			pr.exitCode = 128 + int(ws.Signal())
		}
		_ = err
		close(pr.exited)
	}()
	k.mu.Lock()
	k.procs[pod.UID] = pr
	k.order = append(k.order, pr)
	k.mu.Unlock()
	t := metav1.NewTime(pr.started)
	pod.Status.Phase = corev1.PodRunning
	pod.Status.StartTime = &t
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: t}}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: c.Name, Image: c.Image, Ready: true,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}}}}
	if err := cl.Status().Update(ctx, pod); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("starting pod %s: %w", pod.Name, err)
	}
	return nil
}

// finish completes a pod whose process exited by itself.
func (k *procKubelet) finish(ctx context.Context, pod *corev1.Pod, pr *proc) error {
	t := metav1.NewTime(pr.exitedAt)
	phase, reason := corev1.PodSucceeded, "Completed"
	if pr.exitCode != 0 {
		phase, reason = corev1.PodFailed, "Error"
	}
	pod.Status.Phase = phase
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: t, Reason: "PodCompleted"}}
	for i := range pod.Status.ContainerStatuses {
		pod.Status.ContainerStatuses[i].Ready = false
		pod.Status.ContainerStatuses[i].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: int32(pr.exitCode), Reason: reason, FinishedAt: t}}
	}
	if err := cl.Status().Update(ctx, pod); err != nil {
		if apierrors.IsNotFound(err) {
			pr.finalized = true
			return nil
		}
		return fmt.Errorf("completing pod %s: %w", pod.Name, err)
	}
	pr.finalized = true
	return nil
}

// stepLine is one "step N loss L t T" line of examples/pytorch/train.py.
type stepLine struct {
	step int
	loss float64
	at   time.Time
}

func readSteps(t *testing.T, path string) (steps []stepLine, text string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 6 || f[0] != "step" || f[2] != "loss" || f[4] != "t" {
			continue
		}
		n, err1 := strconv.Atoi(f[1])
		l, err2 := strconv.ParseFloat(f[3], 64)
		ts, err3 := strconv.ParseFloat(f[5], 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			t.Fatalf("%s: %q: %v", path, sc.Text(), err)
		}
		steps = append(steps, stepLine{step: n, loss: l, at: time.Unix(0, int64(ts*1e9))})
	}
	return steps, string(b)
}

// The example trainer (examples/pytorch/train.py, real PyTorch on CPU,
// reporting through the Python client with a pod-bound token that the
// chart's report policy admits) runs as the replica process of a
// TrainingJob under the drover preset: its real loss reaches status.evals
// and SpeCon categorises the job from it; a TE job makes FitGpp preempt
// it, the process gets SIGTERM, checkpoints and reports the checkpoint
// inside its grace period and exits; once the TE job is done the job is
// recreated with DROVER_RESUME_FROM set to that checkpoint and its loss
// continues the curve (the first resumed step's loss equals an
// uninterrupted run's at that step) to the end.
//
// With DROVER_PYTORCH_OUT=dir it writes the figures of docs/trainer.md
// there (make pytorch-figures).
func TestPyTorchTrainerPreemptedAndResumed(t *testing.T) {
	requirePolicy(t, "drover")
	py := torchPython(t)
	ctx := context.Background()
	tc := newCluster(t, 0, "1", "0", standin.Config{})
	node := tc.ns + "-py-0"
	nodes := standin.New(cl, standin.Config{Nodes: 1, Prefix: tc.ns + "-py", Capacity: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"),
		k8s.GPUResource: resource.MustParse("1"), corev1.ResourcePods: resource.MustParse("110")}})
	if err := nodes.RegisterNodes(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}) })
	// The chart's report policy and trainer role; the trainers' service
	// account holds drover-trainer in the namespace.
	applyChart(t, renderChart(t), "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ClusterRole", "ClusterRoleBinding")
	tc.create(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "trainer", Namespace: tc.ns}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "trainer", Namespace: tc.ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "drover-trainer"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "trainer", Namespace: tc.ns}}})

	kube := newProcKubelet(t, tc.ns, node)
	kctx, kstop := context.WithCancel(ctx)
	kdone := make(chan struct{})
	go func() { defer close(kdone); kube.run(kctx) }()
	t.Cleanup(func() { kstop(); <-kdone; kube.stop() })

	tc.startScheduler("drover:alpha=0.05;interval=2;candidates=converged", nil)

	const steps, every = 300, 50
	ckdir := t.TempDir()
	trainArgs := []string{"examples/pytorch/train.py", "--steps", strconv.Itoa(steps), "--checkpoint-every", strconv.Itoa(every)}
	grace := int64(10)
	dur := int64(40)
	be := &v1alpha1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Name: "pytorch", Namespace: tc.ns},
		Spec: v1alpha1.TrainingJobSpec{Class: v1alpha1.ClassBE, EstimatedDurationSeconds: &dur, GracePeriodSeconds: &grace,
			Progress: &v1alpha1.ProgressSpec{Metric: "loss", LowerIsBetter: true},
			ReplicaGroups: []v1alpha1.ReplicaGroup{{Name: "worker", Replicas: 1, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				ServiceAccountName: "trainer",
				Containers: []corev1.Container{{Name: "trainer", Image: "drover-pytorch-example",
					Command: []string{py}, Args: append(slices.Clone(trainArgs), "--checkpoint-dir", ckdir, "--step-delay", "0.1"),
					Env: []corev1.EnvVar{{Name: "PYTHONPATH", Value: filepath.Join(repoRoot, "clients", "python")}},
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), k8s.GPUResource: resource.MustParse("1")},
						Limits:   corev1.ResourceList{k8s.GPUResource: resource.MustParse("1")}}}}}}}}}}
	tc.create(be)
	tc.waitPhase("pytorch", v1alpha1.PhaseRunning, 30*time.Second)

	// SpeCon reads the real loss: evals arrive and SpeCon labels the job
	// with a category.
	var cat string
	tc.eventually("SpeCon's category of the PyTorch job", 60*time.Second, func() (bool, string) {
		tj := tc.get("pytorch")
		l, _ := k8s.PolicyLabels(tj)
		cat = l[specon.LabelCategory]
		return cat != "" && len(tj.Status.Evals) >= 3, fmt.Sprintf("phase %s, %d evals, labels %v", tj.Status.Phase, len(tj.Status.Evals), l)
	})
	// A quarter of the training done before the preemption.
	tc.eventually("a quarter of the training", 60*time.Second, func() (bool, string) {
		p := tc.get("pytorch").Status.Progress
		return p != nil && p.Fraction >= 0.25, fmt.Sprintf("%+v", p)
	})
	before := tc.get("pytorch")
	first := kube.procList()[0]
	logged, _ := readSteps(t, first.log)
	var matched int
	for _, e := range before.Status.Evals {
		for _, s := range logged {
			if math.Abs(s.loss-e.Value) <= 5e-7 {
				matched++
				break
			}
		}
	}
	if matched != len(before.Status.Evals) || len(logged) == 0 {
		t.Errorf("%d of %d status.evals values are losses the trainer printed (%d steps logged)", matched, len(before.Status.Evals), len(logged))
	}
	t.Logf("SpeCon category %s after %d evals; progress %.3f", cat, len(before.Status.Evals), before.Status.Progress.Fraction)

	// A TE job needs the node's one GPU: FitGpp preempts the PyTorch job
	// with its grace period.
	te := tc.job("te", v1alpha1.ClassTE, 5, group{name: "worker", replicas: 1, cpu: "1", gpu: "1"})
	te.Spec.ReplicaGroups[0].Template.Spec.Containers[0].Command = []string{"sleep", "3"}
	tc.create(te)
	sus := tc.waitPhase("pytorch", v1alpha1.PhaseSuspended, 30*time.Second)
	if sus.Status.Preemptions != 1 {
		t.Errorf("preemptions %d, want 1", sus.Status.Preemptions)
	}
	if ok, msg := tc.waitEvent("pytorch", "Preempted"); !ok {
		t.Errorf("no Preempted event: %s", msg)
	}
	select {
	case <-first.exited:
	case <-time.After(time.Duration(grace+5) * time.Second):
		t.Fatalf("the trainer did not exit within its grace period (%d s) after SIGTERM", grace)
	}
	sigterm := kube.sigtermAt(first)
	if sigterm.IsZero() || first.exitCode != 0 {
		t.Fatalf("first attempt: SIGTERM at %v, exit code %d, want a clean exit after SIGTERM", sigterm, first.exitCode)
	}
	ckptTime := first.exitedAt.Sub(sigterm)
	if ckptTime >= time.Duration(grace)*time.Second {
		t.Errorf("SIGTERM to exit took %v, not inside the %d s grace period", ckptTime, grace)
	}
	stepsA, textA := readSteps(t, first.log)
	lastA := stepsA[len(stepsA)-1].step
	wantCkpt := filepath.Join(ckdir, fmt.Sprintf("step-%d.pt", lastA+1))
	fi, err := os.Stat(wantCkpt)
	if err != nil {
		t.Fatalf("no SIGTERM checkpoint after step %d: %v\n%s", lastA, err, textA)
	}
	written := fi.ModTime().Sub(sigterm)
	tc.eventually("the SIGTERM checkpoint in status.progress", 15*time.Second, func() (bool, string) {
		p := tc.get("pytorch").Status.Progress
		return p != nil && p.Checkpoint == wantCkpt && math.Abs(p.CheckpointFraction-float64(lastA+1)/steps) < 1e-9, fmt.Sprintf("%+v", p)
	})

	tc.waitPhase("te", v1alpha1.PhaseSucceeded, 60*time.Second)
	done := tc.waitPhase("pytorch", v1alpha1.PhaseSucceeded, 120*time.Second)
	if done.Status.Attempt < 2 || done.Status.Progress == nil || done.Status.Progress.Fraction != 1 {
		t.Errorf("finished job: attempt %d progress %+v", done.Status.Attempt, done.Status.Progress)
	}
	var second *proc
	for _, p := range kube.procList() {
		if p.resume != "" {
			second = p
		}
	}
	if second == nil {
		t.Fatalf("no replica started with DROVER_RESUME_FROM")
	}
	<-second.exited // it completed its pod, so it has exited
	if second.resume != wantCkpt || second.exitCode != 0 {
		t.Errorf("resumed replica: DROVER_RESUME_FROM %q exit %d, want %q and 0", second.resume, second.exitCode, wantCkpt)
	}
	stepsB, textB := readSteps(t, second.log)
	if len(stepsB) == 0 || stepsB[0].step != lastA+1 || stepsB[len(stepsB)-1].step != steps-1 || !strings.Contains(textB, "resumed from "+wantCkpt) {
		t.Fatalf("resumed attempt did not continue at step %d to %d:\n%s", lastA+1, steps-1, textB)
	}
	// The same run uninterrupted, as the reference curve.
	ref := exec.Command(py, append(slices.Clone(trainArgs), "--checkpoint-dir", t.TempDir())...)
	ref.Dir, ref.Env = repoRoot, append(os.Environ(), "PYTHONPATH="+filepath.Join(repoRoot, "clients", "python"), "DROVER_POD_NAME=")
	refOut := filepath.Join(t.TempDir(), "ref.log")
	out, err := ref.CombinedOutput()
	if err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}
	if err := os.WriteFile(refOut, out, 0o600); err != nil {
		t.Fatal(err)
	}
	stepsRef, _ := readSteps(t, refOut)
	if len(stepsRef) != steps {
		t.Fatalf("reference run logged %d steps, want %d", len(stepsRef), steps)
	}
	// The curve continues: the resumed steps' losses are the uninterrupted
	// run's (same weights, optimizer state and batches), not a restart's.
	var worst float64
	for _, s := range stepsB {
		worst = math.Max(worst, math.Abs(s.loss-stepsRef[s.step].loss))
	}
	if worst > 1e-3 {
		t.Errorf("resumed losses differ from the uninterrupted run's by up to %g (first resumed step %d: %g, reference %g; first step of the run %g)",
			worst, stepsB[0].step, stepsB[0].loss, stepsRef[stepsB[0].step].loss, stepsRef[0].loss)
	}
	resumeTime := stepsB[0].at.Sub(second.started)
	t.Logf("checkpoint: SIGTERM to checkpoint written %v, to exit %v (grace %d s) after step %d; resume: process start to first step %v; resumed losses within %g of the uninterrupted run",
		written.Round(time.Millisecond), ckptTime.Round(time.Millisecond), grace, lastA, resumeTime.Round(time.Millisecond), worst)
	if dir := os.Getenv("DROVER_PYTORCH_OUT"); dir != "" {
		writePyTorchFigures(t, dir, stepsA, stepsB, stepsRef, written, ckptTime, resumeTime, lastA+1, grace, cat, len(before.Status.Evals))
	}
}

func writePyTorchFigures(t *testing.T, dir string, a, b, ref []stepLine, written, ckpt, resume time.Duration, at int, grace int64, cat string, evals int) {
	t.Helper()
	series := func(name string, ls []stepLine, dashed bool) chart.Series {
		s := chart.Series{Name: name, Dashed: dashed}
		for _, l := range ls {
			s.X = append(s.X, float64(l.step))
			s.Y = append(s.Y, l.loss)
		}
		return s
	}
	c := chart.Line{Title: fmt.Sprintf("examples/pytorch: preempted after step %d, resumed from its checkpoint", at-1),
		XLabel: "step", YLabel: "training loss (MSE, per batch)",
		Series: []chart.Series{series("attempt 1", a, false), series("attempt 2 (resumed)", b, false), series("uninterrupted", ref, true)}}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "pytorch-loss.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WriteSVG(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	txt := fmt.Sprintf("# written by TestPyTorchTrainerPreemptedAndResumed (make pytorch-figures)\n"+
		"specon_category_before_preemption %s (after %d evals)\n"+
		"preempted_after_step %d\n"+
		"sigterm_to_checkpoint_written_ms %d\n"+
		"sigterm_to_exit_ms %d (checkpoint written and reported, process gone; grace %d s)\n"+
		"resume_start_to_first_step_ms %d (python and torch start, checkpoint load)\n",
		cat, evals, at-1, written.Milliseconds(), ckpt.Milliseconds(), grace, resume.Milliseconds())
	if err := os.WriteFile(filepath.Join(dir, "pytorch-times.txt"), []byte(txt), 0o644); err != nil {
		t.Fatal(err)
	}
}
