// Package standin is a stand-in for kubelets and training containers, for
// tests and demos on an API server without real machines (envtest, `make
// dev-cluster`). It registers nodes that report Ready, moves the replica
// pods drover binds to them to Running, advances each job's training
// progress by the simulator's model (DefaultSpeed over the replicas that
// run, the job's estimated duration as its work, an exponential loss
// curve), reports progress and checkpoints the documented way (the
// drover.dev/report pod annotation, through package report), completes
// pods when training is done, and honours grace periods: a deleted pod
// writes a checkpoint and goes away within its grace period, like a
// trainer that catches SIGTERM.
package standin

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/k8s/report"
)

// AnnotationStuck on a replica pod's template makes the stand-in ignore
// its deletion, to exercise the scheduler's stuck-termination handling.
const AnnotationStuck = "drover.dev/standin-stuck"

// Config describes the stand-in nodes and how fast trainers run.
type Config struct {
	// Nodes is the number of nodes, named Prefix-0 ... Prefix-(Nodes-1).
	Nodes  int
	Prefix string
	// Capacity of every node; default 8 CPU, 32Gi, 4 nvidia.com/gpu, 110
	// pods.
	Capacity corev1.ResourceList
	// Labels are set on every node.
	Labels map[string]string
	// Tick is how often pods are advanced; default 100ms.
	Tick time.Duration
	// TimeScale is training seconds per wall second (10 runs a 60 s job in
	// 6 s); default 1.
	TimeScale float64
	// CheckpointEvery is the progress between periodic checkpoints;
	// default 0.1.
	CheckpointEvery float64
	// CheckpointDelay is how long (wall time) a trainer takes to write its
	// checkpoint after SIGTERM; it exits then, or at the end of its grace
	// period without a new checkpoint when the grace is shorter. Default
	// 200ms.
	CheckpointDelay time.Duration
	// Curve is the loss curve; default ExpCurve{2, 0.2, 4, 0.01}.
	Curve cluster.EvalCurve
	// Adopt, when set, picks nodes that another component created (a node
	// autoscaler's, such as Karpenter's kwok provider, which creates Node
	// objects without a kubelet behind them) for the stand-in to play as
	// well: every step marks a picked node Ready with the capacity it was
	// created with, removes the not-ready taint, and runs the pods bound to
	// it like those on its own nodes. Deleted nodes are not picked.
	Adopt func(*corev1.Node) bool
}

func (c *Config) defaults() {
	if c.Prefix == "" {
		c.Prefix = "standin"
	}
	if c.Capacity == nil {
		c.Capacity = corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("8"),
			corev1.ResourceMemory: resource.MustParse("32Gi"),
			"nvidia.com/gpu":      resource.MustParse("4"),
			corev1.ResourcePods:   resource.MustParse("110"),
		}
	}
	if c.Tick == 0 {
		c.Tick = 100 * time.Millisecond
	}
	if c.TimeScale == 0 {
		c.TimeScale = 1
	}
	if c.CheckpointEvery == 0 {
		c.CheckpointEvery = 0.1
	}
	if c.CheckpointDelay == 0 {
		c.CheckpointDelay = 200 * time.Millisecond
	}
	if c.Curve == nil {
		c.Curve = cluster.ExpCurve{Start: 2, Floor: 0.2, Rate: 4, Noise: 0.01}
	}
}

// Kubelet runs the stand-in nodes and trainers.
type Kubelet struct {
	cfg Config
	c   client.Client

	mu sync.Mutex
	// trainers are keyed by namespace/job/attempt.
	trainers map[string]*trainer
	// sigterm records when a pod was first seen terminating, by UID.
	sigterm map[string]time.Time
	// ckptDone marks pods that wrote their SIGTERM checkpoint, by UID.
	ckptDone map[string]bool
	// adopted holds the names of the nodes Config.Adopt picked at the
	// last step.
	adopted map[string]bool
}

type trainer struct {
	progress, lastCkpt float64
	ckpt               string
	samples            int
	last               time.Time
	done               bool
}

// New returns a stand-in kubelet; c should read the API server directly
// (not through a lagging cache).
func New(c client.Client, cfg Config) *Kubelet {
	cfg.defaults()
	return &Kubelet{cfg: cfg, c: c, trainers: map[string]*trainer{}, sigterm: map[string]time.Time{}, ckptDone: map[string]bool{}}
}

// NodeName is the name of stand-in node i.
func (k *Kubelet) NodeName(i int) string { return fmt.Sprintf("%s-%d", k.cfg.Prefix, i) }

// RegisterNodes creates the nodes (or updates existing ones) and marks them
// Ready.
func (k *Kubelet) RegisterNodes(ctx context.Context) error {
	for i := range k.cfg.Nodes {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: k.NodeName(i), Labels: map[string]string{}}}
		for key, v := range k.cfg.Labels {
			n.Labels[key] = v
		}
		n.Labels[corev1.LabelHostname] = n.Name
		if err := k.c.Create(ctx, n); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("registering node %s: %w", n.Name, err)
		}
		if err := k.SetReady(ctx, n.Name, true); err != nil {
			return err
		}
	}
	return nil
}

// SetReady sets a node's Ready condition and capacity.
func (k *Kubelet) SetReady(ctx context.Context, name string, ready bool) error {
	n := &corev1.Node{}
	if err := k.c.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
		return fmt.Errorf("reading node %s: %w", name, err)
	}
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	n.Status.Capacity = k.cfg.Capacity.DeepCopy()
	n.Status.Allocatable = k.cfg.Capacity.DeepCopy()
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st, Reason: "StandIn",
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if err := k.c.Status().Update(ctx, n); err != nil {
		return fmt.Errorf("marking node %s ready=%v: %w", name, ready, err)
	}
	// The node lifecycle controller's part: the API server taints a new
	// node node.kubernetes.io/not-ready:NoSchedule, and the controller
	// removes the taint once the node is Ready (adds it back when not).
	// envtest runs no controller manager, so the stand-in does it.
	taints := slices.DeleteFunc(slices.Clone(n.Spec.Taints), func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
	if !ready {
		taints = append(taints, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule})
	}
	if !slices.Equal(taints, n.Spec.Taints) {
		for range 5 {
			if err := k.c.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
				return fmt.Errorf("reading node %s: %w", name, err)
			}
			n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
			if !ready {
				n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule})
			}
			err := k.c.Update(ctx, n)
			if err == nil {
				break
			}
			if !apierrors.IsConflict(err) {
				return fmt.Errorf("updating the taints of node %s: %w", name, err)
			}
		}
	}
	return nil
}

// Run advances pods every tick until ctx is done.
func (k *Kubelet) Run(ctx context.Context) error {
	t := time.NewTicker(k.cfg.Tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := k.Step(ctx); err != nil && ctx.Err() == nil {
			// Transient API errors: the next tick retries.
			_ = err
		}
	}
}

func (k *Kubelet) mine(node string) bool {
	if k.adopted[node] {
		return true
	}
	rest, ok := strings.CutPrefix(node, k.cfg.Prefix+"-")
	if !ok {
		return false
	}
	i, err := strconv.Atoi(rest)
	return err == nil && i >= 0 && i < k.cfg.Nodes
}

// Step advances every pod on the stand-in nodes once.
func (k *Kubelet) Step(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := time.Now()
	if k.cfg.Adopt != nil {
		if err := k.adopt(ctx); err != nil {
			return err
		}
	}
	var pods corev1.PodList
	if err := k.c.List(ctx, &pods, client.HasLabels{v1alpha1.LabelJob}); err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	var jobs v1alpha1.TrainingJobList
	if err := k.c.List(ctx, &jobs); err != nil {
		return fmt.Errorf("listing trainingjobs: %w", err)
	}
	specs := map[string]*v1alpha1.TrainingJob{}
	for i := range jobs.Items {
		specs[jobs.Items[i].Namespace+"/"+jobs.Items[i].Name] = &jobs.Items[i]
	}
	// Group the running replicas by job attempt.
	type gang struct {
		pods []*corev1.Pod
		job  *v1alpha1.TrainingJob
	}
	gangs := map[string]*gang{}
	var keys []string
	var errs []error
	// calls are the API writes of this step that touch only their own
	// pod: they run concurrently (stepWorkers at once), so that a step over
	// hundreds of pods is not hundreds of round trips one after another.
	var calls []func() error
	for i := range pods.Items {
		p := &pods.Items[i]
		if !k.mine(p.Spec.NodeName) || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		key := trainerKey(p)
		if p.DeletionTimestamp != nil {
			if err := k.terminate(ctx, p, key, now); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if p.Status.Phase != corev1.PodRunning {
			calls = append(calls, func() error { return k.start(ctx, p, now) })
			continue
		}
		g := gangs[key]
		if g == nil {
			g = &gang{job: specs[p.Namespace+"/"+p.Labels[v1alpha1.LabelJob]]}
			gangs[key] = g
			keys = append(keys, key)
		}
		g.pods = append(g.pods, p)
	}
	// Other pods bound to these nodes (opted-in pods, a Kubeflow
	// operator's gang pods) run until deleted, and stop like a trainer
	// that needs CheckpointDelay to exit.
	var all corev1.PodList
	if err := k.c.List(ctx, &all); err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	for i := range all.Items {
		p := &all.Items[i]
		if _, drover := p.Labels[v1alpha1.LabelJob]; drover || !k.mine(p.Spec.NodeName) ||
			p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		switch {
		case p.DeletionTimestamp != nil:
			if err := k.terminate(ctx, p, "", now); err != nil {
				errs = append(errs, err)
			}
		case p.Status.Phase != corev1.PodRunning:
			calls = append(calls, func() error { return k.start(ctx, p, now) })
		}
	}
	slices.Sort(keys)
	for _, key := range keys {
		g := gangs[key]
		if g.job == nil {
			continue
		}
		if call := k.train(key, g.job, g.pods, now); call != nil {
			calls = append(calls, func() error { return call(ctx) })
		}
	}
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(stepWorkers)
	for _, call := range calls {
		g.Go(func() error {
			if err := call(); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("stand-in step: %d errors, first: %w", len(errs), errs[0])
	}
	return nil
}

// adopt records the nodes Config.Adopt picks and marks those not yet
// Ready so: a kubelet's registration, with the capacity the node's creator
// gave it (its allocatable too, when that was left empty).
func (k *Kubelet) adopt(ctx context.Context) error {
	var nodes corev1.NodeList
	if err := k.c.List(ctx, &nodes); err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	k.adopted = map[string]bool{}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if n.DeletionTimestamp != nil || !k.cfg.Adopt(n) {
			continue
		}
		k.adopted[n.Name] = true
		ready := slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool {
			return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
		})
		notReadyTaint := slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
		if ready && !notReadyTaint {
			continue
		}
		if !ready {
			if len(n.Status.Allocatable) == 0 {
				n.Status.Allocatable = n.Status.Capacity.DeepCopy()
			}
			n.Status.Phase = corev1.NodeRunning
			n.Status.Conditions = append(slices.DeleteFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool { return c.Type == corev1.NodeReady }),
				corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "StandIn",
					LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()})
			if err := k.c.Status().Update(ctx, n); err != nil {
				if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
					continue // the next step retries
				}
				return fmt.Errorf("marking adopted node %s ready: %w", n.Name, err)
			}
		}
		if notReadyTaint {
			n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
			if err := k.c.Update(ctx, n); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				return fmt.Errorf("removing the not-ready taint of adopted node %s: %w", n.Name, err)
			}
		}
	}
	return nil
}

func trainerKey(p *corev1.Pod) string {
	return p.Namespace + "/" + p.Labels[v1alpha1.LabelJob] + "/" + p.Labels[v1alpha1.LabelAttempt]
}

// start moves a bound pod to Running, as a kubelet does once its
// containers started.
func (k *Kubelet) start(ctx context.Context, p *corev1.Pod, now time.Time) error {
	t := metav1.NewTime(now)
	p.Status.Phase = corev1.PodRunning
	p.Status.StartTime = &t
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: t}}
	p.Status.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}}})
	}
	if err := k.c.Status().Update(ctx, p); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		return fmt.Errorf("starting pod %s: %w", p.Name, err)
	}
	return nil
}

// stepWorkers bounds the concurrent API calls of one step.
const stepWorkers = 16

// train advances one job attempt's progress by the time since the last
// step at the speed of the replicas that run, and returns the API calls
// that report it on the job's first replica (and complete the pods when
// training is done), or nil. The calls touch only this attempt's trainer
// and pods, so calls of different attempts may run concurrently.
func (k *Kubelet) train(key string, tj *v1alpha1.TrainingJob, pods []*corev1.Pod, now time.Time) func(context.Context) error {
	tr := k.trainers[key]
	if tr == nil {
		tr = &trainer{last: now}
		if p, err := strconv.ParseFloat(pods[0].Annotations[v1alpha1.AnnotationResumeProgress], 64); err == nil && pods[0].Annotations[v1alpha1.AnnotationResume] != "" {
			tr.progress, tr.lastCkpt = p, p
			tr.ckpt = pods[0].Annotations[v1alpha1.AnnotationResume]
		}
		k.trainers[key] = tr
	}
	if tr.done {
		return nil
	}
	job := &cluster.Job{ID: key, Work: 1}
	counts := make([]int, len(tj.Spec.ReplicaGroups))
	for _, g := range tj.Spec.ReplicaGroups {
		lo, hi := g.Bounds()
		job.Groups = append(job.Groups, cluster.ReplicaGroup{Name: g.Name, Replicas: int(g.Replicas), Min: int(lo), Max: int(hi)})
	}
	for _, p := range pods {
		for i, g := range job.Groups {
			if g.Name == p.Labels[v1alpha1.LabelGroup] {
				counts[i]++
			}
		}
	}
	work, err := strconv.ParseFloat(pods[0].Annotations[v1alpha1.AnnotationWork], 64)
	if err != nil || work <= 0 {
		work = 60
	}
	speed := cluster.DefaultSpeed{}.Speed(job, counts, 1)
	dt := now.Sub(tr.last).Seconds() * k.cfg.TimeScale
	tr.last = now
	tr.progress = math.Min(1, tr.progress+dt*speed/work)
	r := report.Report{Progress: tr.progress, Time: now.UTC()}
	if tj.Spec.Progress != nil {
		m := k.cfg.Curve.Sample(tr.progress, seedOf(key), tr.samples)
		tr.samples++
		r.Metric = &m
	}
	if tr.progress-tr.lastCkpt >= k.cfg.CheckpointEvery || tr.progress >= 1 {
		tr.lastCkpt = tr.progress
		tr.ckpt = fmt.Sprintf("standin://%s@%.4f", key, tr.progress)
	}
	r.Checkpoint, r.CheckpointProgress = tr.ckpt, tr.lastCkpt
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	finished := tr.progress >= 1
	return func(ctx context.Context) error {
		if err := report.Send(ctx, k.c, pods[0].Namespace, pods[0].Name, r); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if !finished {
			return nil
		}
		for _, p := range pods {
			if err := k.exit(ctx, p, now, 0); err != nil {
				return err // retried at the next tick
			}
		}
		tr.done = true // Step still holds k.mu; no other call touches tr
		return nil
	}
}

// exit ends a pod's containers with the given code.
func (k *Kubelet) exit(ctx context.Context, p *corev1.Pod, now time.Time, code int32) error {
	// The pod changed since it was listed (the report patch): re-read it.
	if err := k.c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("reading pod %s: %w", p.Name, err)
	}
	t := metav1.NewTime(now)
	p.Status.Phase = corev1.PodSucceeded
	reason := "Completed"
	if code != 0 {
		p.Status.Phase, reason = corev1.PodFailed, "Error"
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: t, Reason: "PodCompleted"}}
	for i := range p.Status.ContainerStatuses {
		p.Status.ContainerStatuses[i].Ready = false
		p.Status.ContainerStatuses[i].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, FinishedAt: t}}
	}
	if err := k.c.Status().Update(ctx, p); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("completing pod %s: %w", p.Name, err)
	}
	return nil
}

// terminate handles a deleted pod like a trainer that catches SIGTERM:
// after CheckpointDelay it reports a checkpoint and exits; if its grace
// period ends first it is killed without one. The pod object is then
// removed (a kubelet confirms with a zero-grace delete).
func (k *Kubelet) terminate(ctx context.Context, p *corev1.Pod, key string, now time.Time) error {
	if p.Annotations[AnnotationStuck] == "true" {
		return nil
	}
	uid := string(p.UID)
	first, ok := k.sigterm[uid]
	if !ok {
		first = now
		k.sigterm[uid] = now
	}
	deadline := p.DeletionTimestamp.Time
	ckptAt := first.Add(k.cfg.CheckpointDelay)
	switch {
	case now.Before(ckptAt) && now.Before(deadline):
		return nil // still checkpointing
	case !now.Before(ckptAt) && !ckptAt.After(deadline) && !k.ckptDone[uid]:
		if tr := k.trainers[key]; tr != nil && !tr.done && p.Status.Phase == corev1.PodRunning {
			// Report the checkpoint now and exit at the next tick, so the
			// report is visible before the pod goes away.
			k.ckptDone[uid] = true
			tr.ckpt = fmt.Sprintf("standin://%s@%.4f", key, tr.progress)
			tr.lastCkpt = tr.progress
			r := report.Report{Progress: tr.progress, Checkpoint: tr.ckpt, CheckpointProgress: tr.progress, Time: now.UTC()}
			if err := report.Send(ctx, k.c, p.Namespace, p.Name, r); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			return nil
		}
	}
	zero := int64(0)
	delete(k.sigterm, uid)
	delete(k.ckptDone, uid)
	if err := k.c.Delete(ctx, p, &client.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing terminated pod %s: %w", p.Name, err)
	}
	return nil
}

func seedOf(s string) uint64 {
	var h uint64 = 14695981039346656037
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
