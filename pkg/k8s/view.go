package k8s

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/k8s/view"
	"github.com/drover-sched/drover/pkg/resource"
)

// The names below moved to package view (reading objects into a
// snapshot); they stay here so that callers of pkg/k8s (cmd/, the chart's
// tests, the e2e tests) keep working.

// Labels, annotations and event reasons the snapshot reads or writes.
const (
	AnnotationPreemptions  = view.AnnotationPreemptions
	AnnotationReason       = view.AnnotationReason
	AnnotationRejected     = view.AnnotationRejected
	AnnotationRequeuedAt   = view.AnnotationRequeuedAt
	AnnotationVolcanoGroup = view.AnnotationVolcanoGroup
	GPUResource            = view.GPUResource
	LabelPlacementGroup    = view.LabelPlacementGroup
	LabelPodGroup          = view.LabelPodGroup
	LabelReplicaType       = view.LabelReplicaType
	LabelReplicatedJob     = view.LabelReplicatedJob
	LabelRole              = view.LabelRole
	MaxPolicyLabelBytes    = view.MaxPolicyLabelBytes
	MaxPolicyLabelKey      = view.MaxPolicyLabelKey
	MaxPolicyLabelValue    = view.MaxPolicyLabelValue
	MaxPolicyLabels        = view.MaxPolicyLabels
	PolicyLabelPrefix      = view.PolicyLabelPrefix
	ReasonInvalidPod       = view.ReasonInvalidPod
	ReasonPlacementRefused = view.ReasonPlacementRefused
	ReasonPodGroupNotFound = view.ReasonPodGroupNotFound
	ReasonPodRefused       = view.ReasonPodRefused
	ReasonPodSecurity      = view.ReasonPodSecurity
	ReasonQuotaExceeded    = view.ReasonQuotaExceeded
	ReasonSchedulingGated  = view.ReasonSchedulingGated
	ReasonUnschedulable    = view.ReasonUnschedulable
	RefusalBackoff         = view.RefusalBackoff
)

// Types of package view.
type (
	World      = view.World
	View       = view.View
	Options    = view.Options
	QueueEntry = view.QueueEntry
	Crowded    = view.Crowded
	JobCache   = view.JobCache
	NodeTable  = view.NodeTable
)

// Build is view.Build.
func Build(w *World, now time.Time, o Options) *View { return view.Build(w, now, o) }

// NewJobCache is view.NewJobCache.
func NewJobCache() *JobCache { return view.NewJobCache() }

// NewNodeTable is view.NewNodeTable.
func NewNodeTable() *NodeTable { return view.NewNodeTable() }

// ToJob is view.ToJob.
func ToJob(tj *v1alpha1.TrainingJob, o Options) (*cluster.Job, error) { return view.ToJob(tj, o) }

// JobKey is view.JobKey.
func JobKey(tj *v1alpha1.TrainingJob) string { return view.JobKey(tj) }

// GangJobID is view.GangJobID.
func GangJobID(ns, name string) string { return view.GangJobID(ns, name) }

// FillJobID is view.FillJobID.
func FillJobID(ns, name string) string { return view.FillJobID(ns, name) }

// PodJobID is view.PodJobID.
func PodJobID(p *corev1.Pod) string { return view.PodJobID(p) }

// PodDemand is view.PodDemand.
func PodDemand(s *corev1.PodSpec) resource.Vector { return view.PodDemand(s) }

// Vector is view.Vector.
func Vector(l corev1.ResourceList) resource.Vector { return view.Vector(l) }

// CheckPolicyLabel is view.CheckPolicyLabel.
func CheckPolicyLabel(key, value string) error { return view.CheckPolicyLabel(key, value) }

// PolicyLabels is view.PolicyLabels.
func PolicyLabels(tj *v1alpha1.TrainingJob) (map[string]string, error) { return view.PolicyLabels(tj) }
