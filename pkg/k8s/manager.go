package k8s

import (
	"context"
	"fmt"
	"os"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/plugins"
	"github.com/drover-sched/drover/pkg/policy"
)

// Scheme returns a scheme with the built-in types and TrainingJob.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(v1alpha1.AddToScheme(s))
	utilruntime.Must(schedv1alpha1.AddToScheme(s))
	return s
}

// NewManager builds a controller-runtime manager whose informers feed the
// executor, with leader election (when configured), /metrics and health
// probes, and adds the executor to it as a leader-only runnable: only the
// leader schedules, and a new leader rebuilds everything from the API
// server.
func NewManager(rc *rest.Config, cfg Config, reg *policy.Registry) (manager.Manager, *Executor, error) {
	pol, err := configPolicy(cfg, reg)
	if err != nil {
		return nil, nil, err
	}
	rc = rest.CopyConfig(rc)
	rc.QPS, rc.Burst = cfg.ClientQPS, cfg.ClientBurst
	opts := ctrl.Options{
		Scheme:                        Scheme(),
		Cache:                         cacheOptions(cfg),
		Metrics:                       metricsserver.Options{BindAddress: cfg.MetricsAddr},
		HealthProbeBindAddress:        cfg.HealthAddr,
		LeaderElection:                cfg.LeaderElection,
		LeaderElectionID:              cfg.LeaderElectionID,
		LeaderElectionNamespace:       cfg.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &cfg.LeaseDuration.Duration,
		RenewDeadline:                 &cfg.RenewDeadline.Duration,
		RetryPeriod:                   &cfg.RetryPeriod.Duration,
	}
	var fence *Fence
	if cfg.LeaderElection {
		if fence, err = leaseFence(rc, cfg); err != nil {
			return nil, nil, err
		}
		opts.LeaderElectionResourceLockInterface = fence
	}
	mgr, err := ctrl.NewManager(rc, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("creating manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, nil, err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, nil, err
	}
	ex := New(cfg, WithFence(mgr.GetClient(), fence), mgr.GetAPIReader(), mgr.GetEventRecorderFor(cfg.SchedulerName), pol,
		ctrl.Log.WithName("drover-scheduler"))
	ex.fence = fence
	if err := addInformers(mgr, ex, cfg); err != nil {
		return nil, nil, err
	}
	err = mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if err := ex.EnsurePriorityClass(ctx); err != nil {
			ex.log.Error(err, "placeholders will not get their PriorityClass")
		}
		return ex.Run(ctx)
	}))
	if err != nil {
		return nil, nil, err
	}
	return mgr, ex, nil
}

// configPolicy builds the config's profile or preset.
func configPolicy(cfg Config, reg *policy.Registry) (policy.Policy, error) {
	var pol policy.Policy
	var err error
	if cfg.Profile != nil {
		pol, err = plugins.Profile(*cfg.Profile)
		if err != nil {
			return nil, fmt.Errorf("scheduler config: %w", err)
		}
	} else if pol, err = reg.New(cfg.Policy); err != nil {
		return nil, fmt.Errorf("scheduler config: policy: %w", err)
	}
	return pol, nil
}

// leaseFence is the elector's Lease lock, as controller-runtime makes it,
// behind a Fence that every write of the executor passes (fence.go).
func leaseFence(rc *rest.Config, cfg Config) (*Fence, error) {
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("leader election identity: %w", err)
	}
	lock, err := resourcelock.NewFromKubeconfig(resourcelock.LeasesResourceLock, cfg.LeaderElectionNamespace, cfg.LeaderElectionID,
		resourcelock.ResourceLockConfig{Identity: host + "_" + string(uuid.NewUUID())}, rest.AddUserAgent(rc, "leader-election"), cfg.RenewDeadline.Duration)
	if err != nil {
		return nil, fmt.Errorf("leader election lock: %w", err)
	}
	fence := NewFence(lock, cfg.RenewDeadline.Duration)
	fence.Refused = DefaultMetrics().FencedWrites.Inc
	return fence, nil
}

// addInformers registers the executor's informer handlers and field indexes on
// the manager's cache, and starts the informers of every kind a cycle
// lists.
func addInformers(mgr manager.Manager, ex *Executor, cfg Config) error {
	inf, err := mgr.GetCache().GetInformer(context.Background(), &corev1.Pod{})
	if err != nil {
		return fmt.Errorf("pod informer: %w", err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { observe(ex, o) },
		UpdateFunc: func(_, o any) { observe(ex, o) },
	}); err != nil {
		return fmt.Errorf("pod informer: %w", err)
	}
	if err := indexLive(context.Background(), mgr.GetFieldIndexer(), cfg.SchedulerName); err != nil {
		return err
	}
	ex.indexed = true
	ex.finished = newFinishedJobs(cfg.Namespace)
	jinf, err := mgr.GetCache().GetInformer(context.Background(), &v1alpha1.TrainingJob{})
	if err != nil {
		return fmt.Errorf("trainingjob informer: %w", err)
	}
	if _, err := jinf.AddEventHandler(ex.finished.handler()); err != nil {
		return fmt.Errorf("trainingjob informer: %w", err)
	}
	// Every other kind a cycle lists gets its informer now too, so that
	// the manager starts them together: otherwise the first cycle's lists
	// start them one after another, each waiting for its own initial list.
	// PodGroups only when their CRD is installed (the cycle copes without).
	kinds := []client.Object{&corev1.Node{}, &v1alpha1.TrainingJob{}, &appsv1.Deployment{}, &corev1.ResourceQuota{}}
	if _, err := mgr.GetRESTMapper().RESTMapping(schedv1alpha1.SchemeGroupVersion.WithKind("PodGroup").GroupKind(),
		schedv1alpha1.SchemeGroupVersion.Version); err == nil {
		kinds = append(kinds, &schedv1alpha1.PodGroup{})
	}
	for _, obj := range kinds {
		if _, err := mgr.GetCache().GetInformer(context.Background(), obj); err != nil {
			return fmt.Errorf("%T informer: %w", obj, err)
		}
	}
	return nil
}

// cacheOptions narrows the informers to what the scheduler's role lets it
// watch (charts/drover/templates/rbac.yaml; docs/kubernetes.md, "Least
// privilege"): placeholder Deployments in their namespace only, so that
// the role on Deployments is a Role there; in the namespaced mode
// (Config.Namespaces) TrainingJobs and PodGroups in those namespaces only,
// while pods stay watched in every namespace, because pods of other
// workloads take capacity on the nodes drover places on. Nodes are
// cluster-scoped and watched whole.
func cacheOptions(cfg Config) cache.Options {
	o := cache.Options{ByObject: map[client.Object]cache.ByObject{
		&appsv1.Deployment{}: {Namespaces: map[string]cache.Config{cfg.PlaceholderNamespace: {}}},
	},
		// managedFields are the bulk of a small object and nothing here
		// reads them: every cached object costs less memory without them.
		// Updates sent from a cached copy leave the server's managedFields
		// alone (an unset field is not a request to clear it). Finished
		// TrainingJobs and their finished pods are cut down further to
		// what the scheduler reads of them (trimFinished).
		DefaultTransform: trimFinished(cfg.SchedulerName),
	}
	if len(cfg.Namespaces) > 0 {
		o.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range cfg.Namespaces {
			o.DefaultNamespaces[ns] = cache.Config{}
		}
		// An empty (not nil) map: every namespace, not the defaults.
		o.ByObject[&corev1.Pod{}] = cache.ByObject{Namespaces: map[string]cache.Config{}}
	}
	return o
}

func observe(ex *Executor, o any) {
	if p, ok := o.(*corev1.Pod); ok {
		ex.ObserveReport(p)
	}
}
