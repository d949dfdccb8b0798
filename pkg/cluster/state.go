package cluster

import (
	"cmp"
	"fmt"
	"iter"
	"math"

	"github.com/drover-sched/drover/pkg/resource"
)

// Node is the static description of a machine.
type Node struct {
	Name           string
	InstanceType   string
	Zone           string
	PlacementGroup string
	// Role restricts what may run on the node: "" for anything, or a group
	// name such as "worker" or "ps" (OASiS runs workers and parameter
	// servers on separate server pools). Executors enforce it.
	Role         string
	Capacity     resource.Vector
	PricePerHour float64
	// Labels and Taints are what node constraints match (Kubernetes' node
	// labels and NoSchedule/NoExecute taints; the cluster spec's label=
	// and taint=). Both nil on a node without any.
	Labels map[string]string
	Taints []Taint
}

// InstanceType is an entry of a cloud catalogue that nodes can be
// provisioned from.
type InstanceType struct {
	Name         string
	Capacity     resource.Vector
	PricePerHour float64
}

// NodeState is a node as a snapshot shows it.
type NodeState struct {
	Node
	// Index is the node's position in Snapshot.Nodes; placements refer to
	// nodes by it.
	Index int
	// Ready is false while the node is launching; nothing can be placed on
	// it yet. Gone is set once a node is released; it stays in the slice so
	// that indices remain stable.
	Ready, Gone bool
	// Allocated is the summed demand of replicas placed on the node,
	// including jobs in their grace period and placeholders.
	Allocated resource.Vector
	// Usage is the summed usage of replicas (see ReplicaGroup.Usage).
	Usage resource.Vector
	// Releasing is the part of Allocated held by jobs in their grace period:
	// it will be free when their grace expires.
	Releasing resource.Vector
	// Placeholder is the part of Allocated held by overprovisioning
	// placeholders, which any real job may take.
	Placeholder resource.Vector
	// Jobs are the jobs with at least one replica on the node.
	Jobs []*JobState
}

// Free is what can be placed on the node now.
func (n *NodeState) Free() resource.Vector { return n.Capacity.Sub(n.Allocated) }

// Contention is the factor (at most 1) by which jobs on the node are slowed
// because their summed usage exceeds the capacity, taken over the kinds
// where usage is over.
func (n *NodeState) Contention() float64 {
	f := 1.0
	for k := range n.Usage {
		if n.Usage[k] > n.Capacity[k] && n.Usage[k] > 0 {
			f = math.Min(f, float64(n.Capacity[k])/float64(n.Usage[k]))
		}
	}
	return f
}

// Assignment puts one replica of a group on a node.
type Assignment struct {
	Group int // index into Job.Groups
	Node  int // index into Snapshot.Nodes
}

// Placement lists where each replica of a job runs. Its length per group is
// the group's replica count.
type Placement []Assignment

// Counts returns the replica count per group.
func (p Placement) Counts(groups int) []int {
	c := make([]int, groups)
	for _, a := range p {
		if a.Group >= 0 && a.Group < groups {
			c[a.Group]++
		}
	}
	return c
}

// Count returns the number of replicas of group g, as Counts(...)[g]
// without allocating (hot paths count the workers of every running job).
func (p Placement) Count(g int) int {
	n := 0
	for _, a := range p {
		if a.Group == g {
			n++
		}
	}
	return n
}

// Nodes returns the distinct nodes, in first-use order.
func (p Placement) Nodes() []int {
	var out []int
	for _, a := range p {
		seen := false
		for _, n := range out {
			if n == a.Node {
				seen = true
				break
			}
		}
		if !seen {
			out = append(out, a.Node)
		}
	}
	return out
}

// DemandOn returns the demand the placement puts on each node it uses.
func (p Placement) DemandOn(j *Job) map[int]resource.Vector {
	m := make(map[int]resource.Vector, 2)
	for _, a := range p {
		m[a.Node] = m[a.Node].Add(j.Groups[a.Group].Demand)
	}
	return m
}

// Phase is where a job is in its lifecycle.
type Phase uint8

// Job phases.
const (
	Pending    Phase = iota
	Running          // placed and (unless partial) making progress
	Suspending       // preempted, still running through its grace period
	Migrating        // checkpointing and restoring; holds its new placement, makes no progress
	Done
	Rejected
)

func (p Phase) String() string {
	return [...]string{"Pending", "Running", "Suspending", "Migrating", "Done", "Rejected"}[p]
}

// EvalSample is one reading of a job's evaluation function.
type EvalSample struct {
	T     float64 // time of the reading
	Value float64
}

// JobState is a job as the executor tracks it. Policies read it through a
// Snapshot and must not modify it.
type JobState struct {
	Job   *Job
	Phase Phase
	// Placement is where the job's replicas are, when Running, Suspending
	// or Migrating.
	Placement Placement
	// FirstStart is the first time the job started, -1 before.
	FirstStart float64
	// LastStart is when the job last started or resumed.
	LastStart float64
	// Enqueued is when the job last entered the pending queue.
	Enqueued float64
	// WorkLeft is the work in seconds left at time Updated, and Rate the
	// speed since then. Use Remaining and Progress, which account for the
	// time since Updated.
	WorkLeft, Rate, Updated float64
	// Counts of what has been done to the job.
	Preemptions, Migrations, Resizes int
	// GraceEnds is when a Suspending job stops; PauseEnds when a Migrating
	// job resumes.
	GraceEnds, PauseEnds float64
	// Evals are the readings of the job's evaluation function, oldest first.
	Evals []EvalSample
	// Labels persist small pieces of policy state with the job (SetLabel).
	Labels map[string]string
	// Reason is the last reason a policy gave for not starting the job.
	Reason string
}

// NewJobState returns the state of a job that has not arrived yet.
func NewJobState(j *Job) *JobState {
	return &JobState{Job: j, FirstStart: -1, WorkLeft: j.Work, Updated: j.Submit}
}

// Remaining returns the work left at time now, in seconds at speed 1.
func (s *JobState) Remaining(now float64) float64 {
	r := s.WorkLeft - s.Rate*(now-s.Updated)
	if r < 0 {
		return 0
	}
	return r
}

// Progress returns the completed fraction of the job's work at time now.
func (s *JobState) Progress(now float64) float64 {
	return 1 - s.Remaining(now)/s.Job.Work
}

// TimeLeft is the seconds until the job finishes at its current speed;
// +Inf when it is not progressing. It is the executor's truth (see
// Remaining); policies read EstimatedTimeLeft.
func (s *JobState) TimeLeft(now float64) float64 {
	if s.Rate <= 0 {
		return math.Inf(1)
	}
	return s.Remaining(now) / s.Rate
}

// EstimatedRemaining is the remaining work a policy may use, seconds at
// speed 1: the estimate (Job.EstimatedWork) times the fraction of the
// job not yet done. That is what a production scheduler has: the trainer
// reports its progress, and the total is what the user stated. Remaining
// and TimeLeft are the truth, for the executor and the metrics.
//
// With no estimate drawn (Estimate 0, or equal to Work) it is exactly
// Remaining, so a run without estimates decides as before they existed.
// On Kubernetes Work is the stated estimate and WorkLeft comes from the
// reported progress, so there too it equals Remaining.
func (s *JobState) EstimatedRemaining(now float64) float64 {
	r := s.Remaining(now)
	e := s.Job.Estimate
	if e <= 0 || e == s.Job.Work {
		return r
	}
	return e * (r / s.Job.Work)
}

// EstimatedTimeLeft is EstimatedRemaining over the job's current speed:
// the seconds until it finishes as a policy can estimate them; +Inf when
// it is not progressing.
func (s *JobState) EstimatedTimeLeft(now float64) float64 {
	if s.Rate <= 0 {
		return math.Inf(1)
	}
	return s.EstimatedRemaining(now) / s.Rate
}

// Attained is the work done by now, seconds at speed 1 (Work minus
// Remaining). Policies may read it: attained service is measured (the
// past the executor counted), not estimated, so it needs no oracle. On
// Kubernetes it is the stated estimate times the reported progress.
func (s *JobState) Attained(now float64) float64 {
	return s.Job.Work - s.Remaining(now)
}

// Counts returns the job's current replica count per group.
func (s *JobState) Counts() []int { return s.Placement.Counts(len(s.Job.Groups)) }

func (s *JobState) String() string {
	return fmt.Sprintf("%s(%s)", s.Job.ID, s.Phase)
}

// Queue is the pending queue: head first. Removing a job from anywhere and
// pushing at either end are O(1) amortised, so a cluster with tens of
// thousands of waiting jobs does not make every scheduling cycle O(queue).
//
// A job's Enqueued must not change while it is queued (executors set it
// before they push the job): the queue keeps track of whether its jobs
// are in Enqueued order (see InEnqueuedOrder) as they are pushed.
type Queue struct {
	items []*JobState
	head  int
	live  int
	pos   map[*JobState]int
	// order is what the queue knows of its jobs' order by Enqueued; while
	// it is inOrder, every queued job's Enqueued lies within [lo, hi]
	// (under cmp.Compare; removals may leave the bounds loose).
	order  enqueuedOrder
	lo, hi float64
	// log holds the latest pushes and removals (see QueueLog); logBase
	// counts those dropped from its front.
	log     []queueChange
	logBase uint64
	// renumbered counts the renumberings of Order (see QueueLog).
	renumbered uint64
}

type queueChange struct {
	js     *JobState
	pushed bool
}

// enqueuedOrder is whether a Queue's jobs are in Enqueued order: unknown
// until the queue is scanned again.
type enqueuedOrder uint8

const (
	orderUnknown enqueuedOrder = iota
	inOrder
	outOfOrder
)

// NewQueue returns a queue holding the given jobs, head first.
func NewQueue(jobs ...*JobState) *Queue {
	q := &Queue{pos: make(map[*JobState]int, len(jobs))}
	for _, s := range jobs {
		q.PushBack(s)
	}
	return q
}

// PendingQueue is the pending queue as a policy sees it (Snapshot.Pending):
// it can read the queue but not change it. *Queue implements it; an
// executor hands policies ReadOnly() rather than its own *Queue.
type PendingQueue interface {
	// All yields the queued jobs, head first.
	All() iter.Seq[*JobState]
	// Len returns the number of queued jobs.
	Len() int
	// Head returns the first job, or nil.
	Head() *JobState
	// Contains reports whether the job is queued.
	Contains(s *JobState) bool
	// Order returns a number that grows from the head of the queue to its
	// tail, and whether the job is queued: comparing two jobs' numbers
	// compares their queue positions in O(1), until the queue next
	// changes (never within a scheduling cycle).
	Order(s *JobState) (int, bool)
	// InEnqueuedOrder reports whether All yields the jobs in order of
	// Enqueued: cmp.Compare(a.Enqueued, b.Enqueued) <= 0 for every job a
	// before a job b. It is O(1) amortised while the queue stays in that
	// order (jobs pushed at the tail with the latest Enqueued, at the head
	// with the earliest, or removed), as the simulator's queue is but for
	// a preempted job back at its head.
	InEnqueuedOrder() bool
}

var _ PendingQueue = (*Queue)(nil)

// QueueLog is implemented by a PendingQueue that logs the jobs pushed onto
// it and removed from it, so that a policy can follow the queue across
// cycles in O(changes) instead of reading all of it every cycle. An
// executor whose queue implements it keeps the same queue object from
// cycle to cycle and changes a queued job's Enqueued and Preemptions only
// when it pushes the job, and its Reason and Labels only by applying the
// policy's Wait and SetLabel actions (the simulator does).
type QueueLog interface {
	// Mark returns the number of pushes and removals so far.
	Mark() uint64
	// Since calls f for each push and removal after mark (a value Mark
	// returned), oldest first. It returns false, calling f for none, when
	// the log no longer reaches back to mark: the caller must read the
	// whole queue again.
	Since(mark uint64, f func(js *JobState, pushed bool)) bool
	// Renumbered returns how many times the queue renumbered its jobs'
	// Order numbers. While it stays the same, a queued job keeps its
	// number, and no number is given to two jobs.
	Renumbered() uint64
}

var _ QueueLog = (*Queue)(nil)

// ReadOnly returns a view of the queue that follows its changes but
// cannot make any (it is not a *Queue, so no type assertion recovers one).
func (q *Queue) ReadOnly() PendingQueue { return readOnlyQueue{q} }

type readOnlyQueue struct{ q *Queue }

func (r readOnlyQueue) All() iter.Seq[*JobState]      { return r.q.All() }
func (r readOnlyQueue) Each(f func(*JobState) bool)   { r.q.Each(f) }
func (r readOnlyQueue) Len() int                      { return r.q.Len() }
func (r readOnlyQueue) Head() *JobState               { return r.q.Head() }
func (r readOnlyQueue) Contains(s *JobState) bool     { return r.q.Contains(s) }
func (r readOnlyQueue) Order(s *JobState) (int, bool) { return r.q.Order(s) }
func (r readOnlyQueue) InEnqueuedOrder() bool         { return r.q.InEnqueuedOrder() }
func (r readOnlyQueue) Mark() uint64                  { return r.q.Mark() }
func (r readOnlyQueue) Renumbered() uint64            { return r.q.renumbered }
func (r readOnlyQueue) Since(mark uint64, f func(*JobState, bool)) bool {
	return r.q.Since(mark, f)
}

// Renumbered implements QueueLog.
func (q *Queue) Renumbered() uint64 { return q.renumbered }

// Mark implements QueueLog.
func (q *Queue) Mark() uint64 { return q.logBase + uint64(len(q.log)) }

// Since implements QueueLog.
func (q *Queue) Since(mark uint64, f func(js *JobState, pushed bool)) bool {
	if mark < q.logBase || mark > q.Mark() {
		return false
	}
	for _, c := range q.log[mark-q.logBase:] {
		f(c.js, c.pushed)
	}
	return true
}

// note logs a push or removal. The log keeps at least the latest 1,024
// changes and as many as there are queued jobs: a reader that falls
// further behind reads the whole queue again, which costs as much.
func (q *Queue) note(s *JobState, pushed bool) {
	if n := len(q.log); n >= 2048 && n >= 2*q.live {
		k := n / 2
		m := copy(q.log, q.log[k:])
		clear(q.log[m:])
		q.log = q.log[:m]
		q.logBase += uint64(k)
	}
	q.log = append(q.log, queueChange{js: s, pushed: pushed})
}

// Len returns the number of queued jobs.
func (q *Queue) Len() int { return q.live }

// PushBack appends a job.
func (q *Queue) PushBack(s *JobState) {
	switch {
	case q.live == 0:
		q.order, q.lo, q.hi = inOrder, s.Enqueued, s.Enqueued
	case q.order == inOrder && cmp.Compare(s.Enqueued, q.hi) >= 0:
		q.hi = s.Enqueued
	case q.order == inOrder:
		q.order = orderUnknown // hi may be loose: scan to know
	}
	q.pos[s] = len(q.items)
	q.items = append(q.items, s)
	q.live++
	q.note(s, true)
}

// PushFront puts a job at the head (a preempted job goes back first).
func (q *Queue) PushFront(s *JobState) {
	switch {
	case q.live == 0:
		q.order, q.lo, q.hi = inOrder, s.Enqueued, s.Enqueued
	case q.order == inOrder && cmp.Compare(s.Enqueued, q.lo) <= 0:
		q.lo = s.Enqueued
	case q.order == inOrder:
		q.order = orderUnknown
	}
	if q.head == 0 {
		gap := len(q.items)/2 + 8
		n := make([]*JobState, gap+len(q.items), gap+cap(q.items))
		copy(n[gap:], q.items)
		q.items, q.head = n, gap
		q.renumbered++
		for i := gap; i < len(n); i++ {
			if n[i] != nil {
				q.pos[n[i]] = i
			}
		}
	}
	q.head--
	q.items[q.head] = s
	q.pos[s] = q.head
	q.live++
	q.note(s, true)
}

// Remove takes a job out of the queue; it reports whether it was there.
func (q *Queue) Remove(s *JobState) bool {
	i, ok := q.pos[s]
	if !ok {
		return false
	}
	delete(q.pos, s)
	q.items[i] = nil
	q.live--
	if q.order == outOfOrder {
		q.order = orderUnknown // the job may have been the one out of order
	}
	q.note(s, false)
	for q.head < len(q.items) && q.items[q.head] == nil {
		q.head++
	}
	switch {
	case q.live == 0:
		q.items, q.head = q.items[:0], 0 // reuse the array from the start
		q.renumbered++
	case len(q.items)-q.live > 64 && len(q.items)-q.live > q.live:
		q.compact() // dead slots, before or after head, outnumber live jobs
	}
	return true
}

// Contains reports whether the job is queued.
func (q *Queue) Contains(s *JobState) bool { _, ok := q.pos[s]; return ok }

// Order implements PendingQueue: the job's slot, which removals keep and
// pushes at either end and compaction renumber in queue order.
func (q *Queue) Order(s *JobState) (int, bool) { i, ok := q.pos[s]; return i, ok }

func (q *Queue) compact() {
	n := make([]*JobState, 0, q.live+q.live/2+8)
	for _, s := range q.items[q.head:] {
		if s != nil {
			q.pos[s] = len(n)
			n = append(n, s)
		}
	}
	q.items, q.head = n, 0
	q.renumbered++
}

// All yields the queued jobs, head first.
func (q *Queue) All() iter.Seq[*JobState] {
	return q.Each
}

// Each implements Eacher: All without building a closure.
func (q *Queue) Each(yield func(*JobState) bool) {
	for i := q.head; i < len(q.items); i++ {
		if s := q.items[i]; s != nil && !yield(s) {
			return
		}
	}
}

// Eacher is a PendingQueue that can call a function on each job in queue
// order without allocating (All's iterator is a new closure per call, and
// a range over it moves the loop's variables to the heap when the queue
// is an interface value): a time-driven profile walks the queue once per
// tick.
type Eacher interface {
	Each(yield func(*JobState) bool)
}

var _ Eacher = (*Queue)(nil)

// InEnqueuedOrder implements PendingQueue. A push that keeps the order
// (or a removal from a queue in order) is O(1); otherwise the next call
// scans the queue once.
func (q *Queue) InEnqueuedOrder() bool {
	if q.order == orderUnknown {
		q.order, q.lo, q.hi = inOrder, math.Inf(1), math.Inf(-1)
		first := true
		for i := q.head; i < len(q.items); i++ {
			s := q.items[i]
			if s == nil {
				continue
			}
			if first {
				q.lo, first = s.Enqueued, false
			} else if cmp.Compare(q.hi, s.Enqueued) > 0 {
				q.order = outOfOrder
				break
			}
			q.hi = s.Enqueued
		}
	}
	return q.order == inOrder
}

// Head returns the first job, or nil.
func (q *Queue) Head() *JobState {
	for i := q.head; i < len(q.items); i++ {
		if q.items[i] != nil {
			return q.items[i]
		}
	}
	return nil
}

// Snapshot is the read-only view of the cluster that a policy decides from.
// Executors may share its memory with their own state between cycles
// (building a copy on every cycle would make large replays quadratic), so a
// policy must never modify anything reachable from it.
type Snapshot struct {
	// Now is the current time in seconds.
	Now float64
	// Cycle counts scheduling cycles; with Seed it seeds a policy's random
	// choices: rand.New(rand.NewPCG(Seed, Cycle)).
	Cycle, Seed uint64
	// Nodes are all nodes, including ones still launching. A node's index
	// never changes during a run; a released node stays with Gone set.
	Nodes []*NodeState
	// Running holds the jobs that hold resources: Running, Suspending and
	// Migrating, in no particular order.
	Running []*JobState
	// Pending is the queue of jobs waiting to start, head first, read
	// only. (To build a snapshot by hand, fill a *Queue and assign it.)
	Pending PendingQueue
	// Catalog lists instance types that may be provisioned; empty when the
	// cluster is fixed.
	Catalog []InstanceType
	// Placeholders is the overprovisioning currently held.
	Placeholders []Placeholder
	// Eligibility caches which nodes each replica group's node
	// constraints accept (see Eligibility); the executor keeps it across
	// cycles. Nil: placement computes the sets per cycle.
	Eligibility *Eligibility
	// Gen, when not 0, numbers the states of the cluster the executor's
	// snapshots show: two snapshots of one run with the same Gen show the
	// same nodes, running jobs, queue and placeholders, whatever their
	// Now and Cycle (the simulator moves it on with every event and every
	// cycle that applied more than Waits). 0: unknown (Kubernetes).
	Gen uint64
}

// Placeholder is lowest-priority capacity held so that an autoscaler adds
// nodes ahead of demand: one pod of the given shape per count.
type Placeholder struct {
	Name           string
	Demand         resource.Vector
	Count          int
	PlacementGroup string
}

// Job finds a job by ID among running and pending jobs; it is linear and
// meant for tests and rare lookups.
func (s *Snapshot) Job(id string) *JobState {
	for _, j := range s.Running {
		if j.Job.ID == id {
			return j
		}
	}
	for j := range s.Pending.All() {
		if j.Job.ID == id {
			return j
		}
	}
	return nil
}

// ReadyCapacity sums the capacity of ready nodes.
func (s *Snapshot) ReadyCapacity() resource.Vector {
	var c resource.Vector
	for _, n := range s.Nodes {
		if n.Ready {
			c = c.Add(n.Capacity)
		}
	}
	return c
}
