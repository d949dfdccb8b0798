package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Well-known label and annotation keys. They are the interface between the
// scheduler, the pods it creates and the trainers in those pods, so they
// live with the API rather than in the executor.
const (
	// LabelJob on a pod names the TrainingJob (in the pod's namespace) it
	// is a replica of. Set by the scheduler on every replica pod.
	LabelJob = "drover.dev/job"
	// LabelGroup on a pod names its replica group.
	LabelGroup = "drover.dev/group"
	// LabelAttempt on a pod is the job's start attempt that created it; a
	// migration or a restart after preemption increments the attempt so
	// that new pods never collide with old ones still terminating.
	LabelAttempt = "drover.dev/attempt"
	// LabelPlaceholder marks overprovisioning placeholder pods.
	LabelPlaceholder = "drover.dev/placeholder"

	// AnnotationNode on a replica pod is the node the scheduler chose for
	// it. It is written when the pod is created, before the Binding, so
	// that a scheduler restarted between the two completes the same
	// binding instead of choosing again.
	AnnotationNode = "drover.dev/node"
	// AnnotationResume on a replica pod is the resume hint: the last
	// checkpoint the job reported before it was preempted or migrated.
	// Trainers restore from it when it is set.
	AnnotationResume = "drover.dev/resume-from"
	// AnnotationResumeProgress is the progress fraction at that checkpoint.
	AnnotationResumeProgress = "drover.dev/resume-progress"
	// AnnotationWork on a replica pod is the job's estimated duration in
	// seconds at its requested size (spec.estimatedDurationSeconds); the
	// stand-in trainer uses it as its true run time.
	AnnotationWork = "drover.dev/work-seconds"
	// AnnotationReport on a replica pod is where a trainer reports its
	// progress: a JSON Report (see package pkg/k8s/report). Any language
	// can write it with one PATCH of its own pod.
	AnnotationReport = "drover.dev/report"
	// AnnotationLabels on a scheduler-plugins PodGroup holds the policy
	// labels (policy.SetLabel) of its gang as a JSON object. On a
	// TrainingJob it is ignored: earlier versions kept the labels there,
	// but anyone who may edit a TrainingJob can write its annotations, so
	// they now live in status.policyLabels, which only the scheduler
	// writes (issue 17, item 1).
	AnnotationLabels = "drover.dev/policy-labels"

	// OptInLabel on a plain pod (for example one of a Kubernetes Job or a
	// Kubeflow PyTorchJob) asks drover to schedule it as a one-replica job
	// when its schedulerName is drover. Documented, see docs/kubernetes.md.
	OptInLabel = "drover.dev/schedule"
)

// JobClass is FitGpp's job class.
// +kubebuilder:validation:Enum=TE;BE
type JobClass string

// Job classes.
const (
	// ClassTE is a trial-and-error job that wants a quick answer.
	ClassTE JobClass = "TE"
	// ClassBE is a best-effort job that wants throughput.
	ClassBE JobClass = "BE"
)

// TrainingJobSpec is what the user asks for.
//
// A job with a utility must not claim to run for under a minute: the
// payoff test prices a job by its utility per share-second, and a tiny
// estimate makes that an outlier (issue 24: one such job made another
// tenant's jobs rejected).
// +kubebuilder:validation:XValidation:rule="!has(self.utility) || !has(self.estimatedDurationSeconds) || self.estimatedDurationSeconds >= 60",message="estimatedDurationSeconds must be at least 60 when utility is set",fieldPath=".estimatedDurationSeconds"
type TrainingJobSpec struct {
	// Class is TE (trial-and-error, short and latency-sensitive) or BE
	// (best-effort). Preemptive policies preempt BE jobs for TE jobs.
	// +kubebuilder:default=BE
	// +optional
	Class JobClass `json:"class,omitempty"`

	// Priority orders jobs where the policy honours priorities; higher
	// first.
	// +kubebuilder:validation:Minimum=-1000
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Priority int32 `json:"priority,omitempty"`

	// GracePeriodSeconds is how long a preempted or migrated replica keeps
	// running after SIGTERM to write a checkpoint.
	// +kubebuilder:default=30
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	// +optional
	GracePeriodSeconds *int64 `json:"gracePeriodSeconds,omitempty"`

	// EstimatedDurationSeconds is the expected run time at the requested
	// replica counts. Policies that estimate remaining time use it; it is
	// not a limit. At most one year (31536000); at least 60 when the job
	// has a utility.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=31536000
	// +optional
	EstimatedDurationSeconds *int64 `json:"estimatedDurationSeconds,omitempty"`

	// Tenant is ignored: a user could name another team's tenant and jump
	// its place in a fair-share order. The scheduler takes the tenant from
	// the job's namespace, mapped by its config's tenants field
	// (status.tenant shows the result).
	//
	// Deprecated: ignored by the scheduler; see TrainingJobStatus.Tenant.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Tenant string `json:"tenant,omitempty"`

	// ReplicaGroups are the job's kinds of replicas (workers, parameter
	// servers, ...). The first group does the training work.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=4
	// +listType=map
	// +listMapKey=name
	ReplicaGroups []ReplicaGroup `json:"replicaGroups"`

	// Utility is the value of completing the job as a function of its
	// completion time; admission-controlling policies (OASiS) use it.
	// +optional
	Utility *Utility `json:"utility,omitempty"`

	// Progress describes the evaluation metric the job reports.
	// +optional
	Progress *ProgressSpec `json:"progress,omitempty"`

	// ParameterServer describes a parameter-server job in OASiS's terms
	// (replica groups worker and ps); OASiS needs it to plan the job.
	// +optional
	ParameterServer *ParameterServerSpec `json:"parameterServer,omitempty"`
}

// ParameterServerSpec are OASiS's per-job parameters.
type ParameterServerSpec struct {
	// Epochs over the data set (E).
	// +kubebuilder:validation:Minimum=1
	Epochs int32 `json:"epochs"`
	// Chunks of the data set (N).
	// +kubebuilder:validation:Minimum=1
	Chunks int32 `json:"chunks"`
	// MiniBatches per chunk (M).
	// +kubebuilder:validation:Minimum=1
	MiniBatches int32 `json:"miniBatches"`
	// MiniBatchSeconds is the time to train one mini-batch (tau).
	// +kubebuilder:validation:Minimum=0
	MiniBatchSeconds float64 `json:"miniBatchSeconds"`
	// GradientMB is the size of the gradients a worker pushes (e).
	// +kubebuilder:validation:Minimum=0
	// +optional
	GradientMB float64 `json:"gradientMB,omitempty"`
	// WorkerBandwidthMBps and PSBandwidthMBps are b and B.
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	WorkerBandwidthMBps float64 `json:"workerBandwidthMBps"`
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	PSBandwidthMBps float64 `json:"psBandwidthMBps"`
}

// ReplicaGroup is one kind of replica.
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || self.minReplicas <= self.replicas",message="minReplicas must be <= replicas"
// +kubebuilder:validation:XValidation:rule="!has(self.maxReplicas) || self.replicas <= self.maxReplicas",message="replicas must be <= maxReplicas"
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas",message="minReplicas must be <= maxReplicas"
type ReplicaGroup struct {
	// Name is the role, e.g. worker or ps; it becomes part of pod names.
	// +kubebuilder:validation:Pattern=`^[a-z]([a-z0-9]*)$`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=15
	Name string `json:"name"`
	// Replicas is the requested count.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	Replicas int32 `json:"replicas"`
	// MinReplicas is the fewest replicas an elastic policy may shrink the
	// group to; defaults to replicas (not elastic).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1024
	// +optional
	MinReplicas *int32 `json:"minReplicas,omitempty"`
	// MaxReplicas is the most replicas an elastic policy may grow the
	// group to; defaults to replicas.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	// +optional
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`
	// Template is the pod of one replica. Its containers' resource
	// requests are what the scheduler places.
	Template corev1.PodTemplateSpec `json:"template"`
}

// Utility is OASiS's sigmoid utility weight / (1 + exp(decay·(t −
// targetSeconds))) of the job completion time t.
type Utility struct {
	// Weight is the value of finishing at once (G1), in [0, 1e6]: values
	// are relative within a tenant, so no user needs more range.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000
	Weight float64 `json:"weight"`
	// Decay is how sharply value falls after the target, per second (G2);
	// 0 is time-insensitive; at most 1 (value falls e-fold per second).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	// +optional
	Decay float64 `json:"decay,omitempty"`
	// TargetSeconds is the completion time at which half the value is
	// lost (G3); at most one year (31536000).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=31536000
	// +optional
	TargetSeconds float64 `json:"targetSeconds,omitempty"`
}

// ProgressSpec names the metric the job reports.
type ProgressSpec struct {
	// Metric is the name of the evaluation metric, e.g. loss.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Metric string `json:"metric"`
	// LowerIsBetter is true for a loss, false for an accuracy.
	// +kubebuilder:default=true
	// +optional
	LowerIsBetter bool `json:"lowerIsBetter,omitempty"`
}

// TrainingJobPhase is where a job is in its lifecycle.
// +kubebuilder:validation:Enum=Pending;Admitted;Running;Suspended;Succeeded;Failed;Rejected
type TrainingJobPhase string

// Phases.
const (
	// PhasePending: waiting in the queue.
	PhasePending TrainingJobPhase = "Pending"
	// PhaseAdmitted: the policy placed the job; its pods are being created
	// and bound.
	PhaseAdmitted TrainingJobPhase = "Admitted"
	// PhaseRunning: every replica pod is running.
	PhaseRunning TrainingJobPhase = "Running"
	// PhaseSuspended: preempted; its pods are checkpointing or gone and the
	// job waits at the head of the queue.
	PhaseSuspended TrainingJobPhase = "Suspended"
	// PhaseSucceeded: the training pods completed.
	PhaseSucceeded TrainingJobPhase = "Succeeded"
	// PhaseFailed: a replica failed.
	PhaseFailed TrainingJobPhase = "Failed"
	// PhaseRejected: admission control turned the job down.
	PhaseRejected TrainingJobPhase = "Rejected"
)

// Terminal reports whether the phase is final.
func (p TrainingJobPhase) Terminal() bool {
	return p == PhaseSucceeded || p == PhaseFailed || p == PhaseRejected
}

// Condition types.
const (
	// ConditionAdmitted is true once the job was placed.
	ConditionAdmitted = "Admitted"
	// ConditionMigrating is true while the job checkpoints for a move.
	ConditionMigrating = "Migrating"
	// ConditionStuck is true when a replica pod stayed terminating past
	// its grace period.
	ConditionStuck = "TerminationStuck"
	// ConditionSucceeded is true once the job completed (`kubectl wait
	// --for=condition=Succeeded tj/NAME`).
	ConditionSucceeded = "Succeeded"
	// ConditionFailed is true once the job failed or was rejected.
	ConditionFailed = "Failed"
	// ConditionSuspended is true while the job is preempted (suspended
	// with its progress, waiting at the head of the queue).
	ConditionSuspended = "Suspended"
	// ConditionUnschedulable is true while the job is held out of the
	// queue because it cannot start as things are: no node could ever run
	// it (reason Unschedulable) or its namespace's ResourceQuota has no
	// room for it (reason QuotaExceeded); the message says why. Set false
	// when the job is placed.
	ConditionUnschedulable = "Unschedulable"
)

// Assignment is a number of replicas of a group placed on one node.
type Assignment struct {
	Group string `json:"group"`
	Node  string `json:"node"`
	// +kubebuilder:validation:Minimum=1
	Count int32 `json:"count"`
}

// GroupStatus counts a group's replicas.
type GroupStatus struct {
	Name string `json:"name"`
	// Desired is the count the current placement holds.
	Desired int32 `json:"desired"`
	// Running counts replica pods in phase Running.
	Running int32 `json:"running"`
}

// EvalSample is one reported value of the job's metric.
type EvalSample struct {
	// Time is when the trainer reported it.
	Time ReportTime `json:"time"`
	// Value of the metric.
	Value float64 `json:"value"`
}

// ProgressStatus is the latest progress a trainer reported.
type ProgressStatus struct {
	// Fraction of the training done, in [0, 1].
	Fraction float64 `json:"fraction"`
	// Metric is the last metric value, if any was reported.
	// +optional
	Metric *float64 `json:"metric,omitempty"`
	// Checkpoint is the last checkpoint the trainer wrote (a path or URL
	// that the trainer understands); it becomes the resume hint.
	// +optional
	Checkpoint string `json:"checkpoint,omitempty"`
	// CheckpointFraction is the progress at that checkpoint.
	// +optional
	CheckpointFraction float64 `json:"checkpointFraction,omitempty"`
	// ReportedAt is when the trainer reported.
	ReportedAt ReportTime `json:"reportedAt"`
}

// TrainingJobStatus is what the scheduler observed and decided. The
// scheduler keeps all its state here (and in annotations and pods), so a
// restarted scheduler rebuilds everything from the API server.
type TrainingJobStatus struct {
	// Phase of the job. A job the scheduler has not written yet reads as
	// Pending (a schema default, applied by the API server when it serves
	// the object), so that a new job needs no status write to show it.
	// +optional
	// +kubebuilder:default=Pending
	Phase TrainingJobPhase `json:"phase,omitempty"`
	// Reason is the last explanation for the phase (why the job waits, was
	// rejected, ...).
	// +optional
	Reason string `json:"reason,omitempty"`
	// Placement is where the scheduler decided the replicas run; replica
	// pods are created from it. Empty while pending.
	// +optional
	Placement []Assignment `json:"placement,omitempty"`
	// Attempt counts starts, migrations included; replica pod names carry
	// it.
	// +optional
	Attempt int32 `json:"attempt,omitempty"`
	// Migrating is set while the old pods of a migration terminate; the
	// new pods are created once they are gone.
	// +optional
	Migrating bool `json:"migrating,omitempty"`
	// RequeuedAt is set when the job was preempted: requeued jobs wait at
	// the head of the queue, most recent first.
	// +optional
	RequeuedAt *metav1.Time `json:"requeuedAt,omitempty"`
	// Replicas per group.
	// +optional
	Replicas []GroupStatus `json:"replicas,omitempty"`
	// ReplicaSummary is "running/desired" summed over the groups (desired:
	// the placement's count, or the requested count while the job waits),
	// for kubectl's Replicas column. The scheduler sets it on every status
	// write.
	// +optional
	ReplicaSummary string `json:"replicaSummary,omitempty"`
	// ProgressSummary is progress.fraction as a whole percentage ("42%"),
	// for kubectl's Progress column: a number column would print the
	// float in full (0.41718750000000004). The scheduler sets it on every
	// status write; scripts should read progress.fraction.
	// +optional
	ProgressSummary string `json:"progressSummary,omitempty"`
	// QueuePosition is the job's place in the scheduler's queue, 1 at the
	// head, for the first queuePositions jobs of the scheduler's config and
	// refreshed at most every queuePositionPeriod; unset for jobs further
	// back and for jobs that do not wait. `drover queue` shows the whole
	// queue as it is now.
	// +optional
	QueuePosition *int32 `json:"queuePosition,omitempty"`
	// ProgressCategory is the policy's category of the job's progress
	// (e.g. SpeCon's converging / converged), or a quartile of progress.
	// +optional
	ProgressCategory string `json:"progressCategory,omitempty"`
	// Progress is the last progress report.
	// +optional
	Progress *ProgressStatus `json:"progress,omitempty"`
	// Evals are the recent metric reports, oldest first (at most 64).
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Evals []EvalSample `json:"evals,omitempty"`
	// Preemptions, Migrations and Resizes count what the scheduler did.
	// +optional
	Preemptions int32 `json:"preemptions,omitempty"`
	// +optional
	Migrations int32 `json:"migrations,omitempty"`
	// +optional
	Resizes int32 `json:"resizes,omitempty"`
	// StartTime is when the job first started; CompletionTime when it
	// finished.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// PolicyLabels is the policy's state kept with the job
	// (policy.SetLabel, e.g. SpeCon's drover.dev/rr-slot and category),
	// so that it survives scheduler restarts. Here, in the status
	// subresource, because only the scheduler writes status; the
	// scheduler still bounds and checks every entry it reads back
	// (k8s.PolicyLabels).
	// +kubebuilder:validation:MaxProperties=32
	// +optional
	PolicyLabels map[string]string `json:"policyLabels,omitempty"`
	// Tenant is the owner the scheduler charges the job to for fairness:
	// the namespace, or what the scheduler config's tenants field maps it
	// to. Set on every status write.
	// +optional
	Tenant string `json:"tenant,omitempty"`
	// Conditions: Admitted, Unschedulable, Migrating, TerminationStuck,
	// Suspended, Succeeded, Failed.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// TrainingJob is a deep-learning training job scheduled by drover.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=tj,categories=drover
// +kubebuilder:printcolumn:name="Class",type=string,JSONPath=`.spec.class`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Replicas",type=string,JSONPath=`.status.replicaSummary`,description="running/desired replicas"
// +kubebuilder:printcolumn:name="Progress",type=string,JSONPath=`.status.progressSummary`,description="progress.fraction as a whole percentage"
// +kubebuilder:printcolumn:name="Preemptions",type=integer,JSONPath=`.status.preemptions`
// +kubebuilder:printcolumn:name="Migrations",type=integer,JSONPath=`.status.migrations`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.reason`,priority=1
// +kubebuilder:printcolumn:name="Tenant",type=string,JSONPath=`.status.tenant`,priority=1,description="the tenant the scheduler charges: the namespace or its mapping in the scheduler config"
// +kubebuilder:printcolumn:name="Attempt",type=integer,JSONPath=`.status.attempt`,priority=1
// +kubebuilder:printcolumn:name="Queue",type=integer,JSONPath=`.status.queuePosition`,priority=1,description="position in the queue, 1 at the head"
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 40",message="metadata.name must be at most 40 characters (replica pod names append group, attempt and index)"
type TrainingJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec TrainingJobSpec `json:"spec"`
	// Status defaults to an empty object, so that its own defaults
	// (phase Pending) apply to a job nobody has written a status for.
	// +kubebuilder:default={}
	Status TrainingJobStatus `json:"status,omitempty"`
}

// TrainingJobList is a list of TrainingJobs.
// +kubebuilder:object:root=true
type TrainingJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TrainingJob `json:"items"`
}

// Grace returns the grace period in seconds (30 when unset).
func (j *TrainingJob) Grace() int64 {
	if j.Spec.GracePeriodSeconds == nil {
		return 30
	}
	return *j.Spec.GracePeriodSeconds
}

// Bounds returns the group's min and max replicas with their defaults.
func (g *ReplicaGroup) Bounds() (lo, hi int32) {
	lo, hi = g.Replicas, g.Replicas
	if g.MinReplicas != nil {
		lo = *g.MinReplicas
	}
	if g.MaxReplicas != nil {
		hi = *g.MaxReplicas
	}
	return lo, hi
}
