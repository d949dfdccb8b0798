package k8s

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/k8s/apply"
	"github.com/drover-sched/drover/pkg/k8s/view"
	"github.com/drover-sched/drover/pkg/plugins"
	"github.com/drover-sched/drover/pkg/profile"
	"github.com/drover-sched/drover/pkg/textio"
)

// Config is the scheduler's configuration file (YAML or JSON). Every field
// has a default, so an empty file is valid.
type Config struct {
	// Policy is a preset, "name" or "name:k=v;k=v" (see `drover sim
	// --list`). Default drover (all five papers in one profile), unless
	// Profile is set.
	Policy string `json:"policy,omitempty"`
	// Profile is a profile given plugin by plugin (see docs/ARCHITECTURE.md,
	// "Profiles as configuration"), instead of a preset. Unknown plugins
	// and arguments are errors at start-up that name the field.
	Profile *profile.Spec `json:"profile,omitempty"`
	// Period is the time between scheduling cycles. Default 1s.
	Period metav1.Duration `json:"period,omitempty"`
	// Seed seeds the policies' random choices.
	Seed uint64 `json:"seed,omitempty"`
	// SchedulerName is set on replica pods (and names the Event source).
	// Default drover.
	SchedulerName string `json:"schedulerName,omitempty"`
	// Namespace limits the TrainingJobs scheduled to one namespace; empty
	// means all. It does not narrow the scheduler's informers or its
	// permissions: for that, see Namespaces.
	Namespace string `json:"namespace,omitempty"`
	// Namespaces turns on the namespaced mode: the scheduler schedules
	// TrainingJobs, PodGroups and opted-in pods of these namespaces only,
	// and watches TrainingJobs and PodGroups in them only, so that its
	// RBAC can be RoleBindings in these namespaces (the chart renders them
	// from this list) instead of cluster-wide writes. It still reads pods
	// of every namespace: pods of other workloads take capacity on the
	// nodes it places on. Empty: every namespace. Give Namespace or
	// Namespaces, not both. See docs/kubernetes.md, "Least privilege".
	Namespaces []string `json:"namespaces,omitempty"`
	// DefaultDurationSeconds is the work assumed for a job without
	// spec.estimatedDurationSeconds. Default 3600.
	DefaultDurationSeconds float64 `json:"defaultDurationSeconds,omitempty"`
	// StuckAfter is how long past its grace period a terminating pod may
	// stay before it is reported and no longer waited for. Default 30s.
	StuckAfter metav1.Duration `json:"stuckAfter,omitempty"`
	// PlaceholderNamespace holds the placeholder Deployments. Default
	// drover-system.
	PlaceholderNamespace string `json:"placeholderNamespace,omitempty"`
	// PlaceholderPriorityClass is the PriorityClass of placeholder pods;
	// the scheduler creates it with value -10 when missing. Default
	// drover-placeholder.
	PlaceholderPriorityClass string `json:"placeholderPriorityClass,omitempty"`
	// PauseImage is the placeholder pods' image.
	PauseImage string `json:"pauseImage,omitempty"`
	// LeaderElection enables leader election so that several replicas can
	// run with one active. LeaderElectionNamespace holds its Lease.
	LeaderElection          bool   `json:"leaderElection,omitempty"`
	LeaderElectionNamespace string `json:"leaderElectionNamespace,omitempty"`
	LeaderElectionID        string `json:"leaderElectionID,omitempty"`
	// LeaseDuration, RenewDeadline and RetryPeriod time leader election
	// (controller-runtime's defaults: 15s, 10s, 2s). A standby may take
	// the Lease LeaseDuration after the leader's last renewal; the leader
	// renews every RetryPeriod and stops writing, at once, when its last
	// renewal is RenewDeadline old (Fence), so a leader frozen past its
	// lease never writes after it resumes. RetryPeriod*1.2 < RenewDeadline
	// < LeaseDuration.
	LeaseDuration metav1.Duration `json:"leaseDuration,omitempty"`
	RenewDeadline metav1.Duration `json:"renewDeadline,omitempty"`
	RetryPeriod   metav1.Duration `json:"retryPeriod,omitempty"`
	// MetricsAddr serves Prometheus metrics on /metrics ("0" disables).
	// Default :8080. HealthAddr serves /healthz and /readyz. Default :8081.
	MetricsAddr string `json:"metricsAddr,omitempty"`
	HealthAddr  string `json:"healthAddr,omitempty"`
	// Catalog lists the instance types the cluster autoscaler can add, so
	// that autoscaling policies can size placeholders; empty for a fixed
	// cluster.
	Catalog []InstanceType `json:"catalog,omitempty"`
	// ClientQPS and ClientBurst limit the scheduler's API requests
	// (client-go's default of 5 QPS would cap binding at a few pods per
	// second). Default 200 and 400.
	ClientQPS   float32 `json:"clientQPS,omitempty"`
	ClientBurst int     `json:"clientBurst,omitempty"`
	// QueuePositions is how many jobs at the head of the queue get
	// status.queuePosition (kubectl's wide Queue column), rewritten at most
	// every QueuePositionPeriod and only where it changed; 0 turns it off.
	// Default 20 and 10s: a bounded number of status writes, however long
	// the queue.
	QueuePositions      *int            `json:"queuePositions,omitempty"`
	QueuePositionPeriod metav1.Duration `json:"queuePositionPeriod,omitempty"`
	// ProgressPeriod is how long a trainer's progress report may wait in
	// the scheduler's memory before it is written to the TrainingJob's
	// status.progress and status.evals on its own. Any other status write
	// of the job (running, completion, preemption, ...) carries it at
	// once, and policies see it at once (the snapshot reads it from
	// memory); only the API server's copy lags, by at most this long.
	// Below Period, every new report is written at the next cycle (one
	// status write per running job per cycle). Default 10s.
	ProgressPeriod metav1.Duration `json:"progressPeriod,omitempty"`
	// Tenants maps namespaces to the tenant fair-share policies (drf, the
	// drover preset's ordering) charge their jobs to; a namespace not
	// listed is its own tenant. Only the operator who writes this config
	// decides tenants: a TrainingJob's spec.tenant is ignored, since any
	// user could name another team's tenant there and jump its place.
	// Keys are namespace names, values DNS-1123 labels.
	Tenants map[string]string `json:"tenants,omitempty"`
	// ReportClockSkew is how far in the future of the scheduler's clock a
	// trainer's progress report (the drover.dev/report annotation) may be
	// dated and still be read. Reports keep the newest by their time, so a
	// report dated in 2099 would otherwise pin the job's progress for
	// good; a later one is ignored (and logged). Default 1m, at most 1h.
	ReportClockSkew metav1.Duration `json:"reportClockSkew,omitempty"`
}

// Defaults fills unset fields.
func (c *Config) Defaults() {
	if c.Policy == "" && c.Profile == nil {
		c.Policy = "drover"
	}
	if c.Period.Duration == 0 {
		c.Period.Duration = time.Second
	}
	if c.SchedulerName == "" {
		c.SchedulerName = "drover"
	}
	if c.DefaultDurationSeconds == 0 {
		c.DefaultDurationSeconds = 3600
	}
	if c.StuckAfter.Duration == 0 {
		c.StuckAfter.Duration = 30 * time.Second
	}
	if c.PlaceholderNamespace == "" {
		c.PlaceholderNamespace = "drover-system"
	}
	if c.PlaceholderPriorityClass == "" {
		c.PlaceholderPriorityClass = "drover-placeholder"
	}
	if c.PauseImage == "" {
		c.PauseImage = "registry.k8s.io/pause:3.10"
	}
	if c.LeaderElectionNamespace == "" {
		c.LeaderElectionNamespace = "drover-system"
	}
	if c.LeaderElectionID == "" {
		c.LeaderElectionID = "drover-scheduler"
	}
	if c.LeaseDuration.Duration == 0 {
		c.LeaseDuration.Duration = 15 * time.Second
	}
	if c.RenewDeadline.Duration == 0 {
		c.RenewDeadline.Duration = 10 * time.Second
	}
	if c.RetryPeriod.Duration == 0 {
		c.RetryPeriod.Duration = 2 * time.Second
	}
	if c.MetricsAddr == "" {
		c.MetricsAddr = ":8080"
	}
	if c.HealthAddr == "" {
		c.HealthAddr = ":8081"
	}
	if c.ClientQPS == 0 {
		c.ClientQPS = 200
	}
	if c.ClientBurst == 0 {
		c.ClientBurst = 400
	}
	if c.QueuePositions == nil {
		n := 20
		c.QueuePositions = &n
	}
	if c.QueuePositionPeriod.Duration == 0 {
		c.QueuePositionPeriod.Duration = 10 * time.Second
	}
	if c.ProgressPeriod.Duration == 0 {
		c.ProgressPeriod.Duration = 10 * time.Second
	}
	if c.ReportClockSkew.Duration == 0 {
		c.ReportClockSkew.Duration = time.Minute
	}
}

// Validate checks the fields; errors name the field.
func (c *Config) Validate() error {
	switch {
	case c.Period.Duration < 10*time.Millisecond:
		return fmt.Errorf("period: %v is below 10ms", c.Period.Duration)
	case c.DefaultDurationSeconds <= 0:
		return fmt.Errorf("defaultDurationSeconds: %v is not positive", c.DefaultDurationSeconds)
	case c.StuckAfter.Duration < 0:
		return fmt.Errorf("stuckAfter: %v is negative", c.StuckAfter.Duration)
	case c.QueuePositions != nil && (*c.QueuePositions < 0 || *c.QueuePositions > 1000):
		return fmt.Errorf("queuePositions: %d is not in [0, 1000]", *c.QueuePositions)
	case c.QueuePositionPeriod.Duration < 0:
		return fmt.Errorf("queuePositionPeriod: %v is negative", c.QueuePositionPeriod.Duration)
	case c.ProgressPeriod.Duration < 0:
		return fmt.Errorf("progressPeriod: %v is negative", c.ProgressPeriod.Duration)
	case c.RetryPeriod.Duration <= 0 || float64(c.RetryPeriod.Duration)*1.2 >= float64(c.RenewDeadline.Duration):
		return fmt.Errorf("retryPeriod: %v must be positive and 1.2 times it below renewDeadline %v", c.RetryPeriod.Duration, c.RenewDeadline.Duration)
	case c.RenewDeadline.Duration >= c.LeaseDuration.Duration:
		return fmt.Errorf("renewDeadline: %v must be below leaseDuration %v", c.RenewDeadline.Duration, c.LeaseDuration.Duration)
	case c.ReportClockSkew.Duration < 0 || c.ReportClockSkew.Duration > time.Hour:
		return fmt.Errorf("reportClockSkew: %v is not in [0, 1h]", c.ReportClockSkew.Duration)
	case c.Namespace != "" && len(c.Namespaces) > 0:
		return fmt.Errorf("namespace and namespaces: give one (namespace %q filters TrainingJobs; namespaces is the namespaced mode)", c.Namespace)
	}
	seen := map[string]bool{}
	for i, ns := range c.Namespaces {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("namespaces[%d]: %q is not a namespace name: %s", i, ns, strings.Join(errs, "; "))
		}
		if seen[ns] {
			return fmt.Errorf("namespaces[%d]: %q is listed twice", i, ns)
		}
		seen[ns] = true
	}
	if c.Policy != "" && c.Profile != nil {
		return fmt.Errorf("policy and profile: give one (policy %q names a preset; profile lists plugins)", c.Policy)
	}
	if c.Profile != nil {
		if _, err := plugins.Profile(*c.Profile); err != nil {
			return err
		}
	}
	for _, ns := range slices.Sorted(maps.Keys(c.Tenants)) {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("tenants: key %q is not a namespace name: %s", ns, strings.Join(errs, "; "))
		}
		if errs := validation.IsDNS1123Label(c.Tenants[ns]); len(errs) > 0 {
			return fmt.Errorf("tenants[%s]: %q is not a DNS-1123 label: %s", ns, c.Tenants[ns], strings.Join(errs, "; "))
		}
	}
	for i, it := range c.Catalog {
		if it.Name == "" || view.Vector(it.Capacity).IsZero() {
			return fmt.Errorf("catalog[%d]: name and capacity are required", i)
		}
	}
	return nil
}

// LoadConfig reads a configuration file; unknown fields are errors so that
// a typo is not silently ignored. An empty path gives the defaults.
func LoadConfig(path string) (Config, error) {
	var c Config
	if path != "" {
		b, err := textio.ReadFile(path)
		if err != nil {
			return c, fmt.Errorf("reading scheduler config: %w", err)
		}
		if len(bytes.TrimSpace(b)) > 0 {
			if err := yaml.UnmarshalStrict(b, &c); err != nil {
				return c, fmt.Errorf("scheduler config %s: %w", path, err)
			}
		}
	}
	c.Defaults()
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("scheduler config %s: %w", path, err)
	}
	return c, nil
}

// InstanceType is a node shape the cluster autoscaler can provision.
type InstanceType struct {
	Name         string              `json:"name"`
	Capacity     corev1.ResourceList `json:"capacity"`
	PricePerHour float64             `json:"pricePerHour,omitempty"`
}

// catalog converts the configured instance types.
func (c *Config) catalog() []cluster.InstanceType {
	out := make([]cluster.InstanceType, 0, len(c.Catalog))
	for _, it := range c.Catalog {
		out = append(out, cluster.InstanceType{Name: it.Name, Capacity: view.Vector(it.Capacity), PricePerHour: it.PricePerHour})
	}
	return out
}

// InScope reports whether the scheduler works in namespace ns: true for
// every namespace unless Namespaces (the namespaced mode) lists others.
func (c *Config) InScope(ns string) bool {
	return len(c.Namespaces) == 0 || slices.Contains(c.Namespaces, ns)
}

// applyConfig is what the writes need of the configuration.
func (c *Config) applyConfig() apply.Config {
	return apply.Config{SchedulerName: c.SchedulerName, PlaceholderNamespace: c.PlaceholderNamespace,
		PlaceholderPriorityClass: c.PlaceholderPriorityClass, PauseImage: c.PauseImage, Tenants: c.Tenants,
		DefaultDurationSeconds: c.DefaultDurationSeconds, ProgressPeriod: c.ProgressPeriod.Duration}
}
