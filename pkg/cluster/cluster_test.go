package cluster

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/drover-sched/drover/pkg/resource"
)

func job(id string) *Job {
	return &Job{ID: id, Work: 100, Groups: []ReplicaGroup{{Name: "worker", Demand: resource.New(1, 1, 1), Replicas: 2, Min: 1, Max: 4}}}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Job)
		want   string // substring of the error; "" for valid
	}{
		{"valid", func(*Job) {}, ""},
		{"no id", func(j *Job) { j.ID = "" }, "id: empty"},
		{"zero work", func(j *Job) { j.Work = 0 }, "work"},
		{"negative grace", func(j *Job) { j.GracePeriod = -1 }, "grace_period"},
		{"min above max", func(j *Job) { j.Groups[0].Min = 5 }, "min_replicas"},
		{"zero max", func(j *Job) { j.Groups[0].Max = 0; j.Groups[0].Min = 0; j.Groups[0].Replicas = 0 }, "max_replicas"},
		{"replicas outside", func(j *Job) { j.Groups[0].Replicas = 9 }, "replicas"},
		{"zero demand", func(j *Job) { j.Groups[0].Demand = resource.Vector{} }, "demand"},
		{"no groups", func(j *Job) { j.Groups = nil }, "groups"},
		{"an estimate", func(j *Job) { j.Estimate = 50 }, ""},
		{"negative estimate", func(j *Job) { j.Estimate = -1 }, "estimate"},
		{"NaN estimate", func(j *Job) { j.Estimate = math.NaN() }, "estimate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := job("j1")
			tc.mutate(j)
			err := j.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
			if tc.name != "no id" && !strings.Contains(err.Error(), "job j1") {
				t.Errorf("error %v does not name the job", err)
			}
		})
	}
}

func TestQueueOrder(t *testing.T) {
	q := NewQueue()
	var st []*JobState
	for i := 0; i < 200; i++ {
		s := NewJobState(job(string(rune('a'+i%26)) + string(rune('0'+i/26))))
		st = append(st, s)
		q.PushBack(s)
	}
	// Remove every other job from the middle, then the head, then push
	// one to the front: order must be preserved and compaction invisible.
	for i := 1; i < 200; i += 2 {
		if !q.Remove(st[i]) {
			t.Fatalf("Remove(%d) reported absent", i)
		}
	}
	if q.Remove(st[1]) {
		t.Fatal("second Remove of the same job reported present")
	}
	q.Remove(st[0])
	q.PushFront(st[1])
	var got []*JobState
	for s := range q.All() {
		got = append(got, s)
	}
	want := []*JobState{st[1]}
	for i := 2; i < 200; i += 2 {
		want = append(want, st[i])
	}
	if !slices.Equal(got, want) {
		t.Fatalf("queue order wrong: got %d jobs, want %d", len(got), len(want))
	}
	if q.Len() != len(want) || q.Head() != st[1] {
		t.Fatalf("Len=%d Head=%v", q.Len(), q.Head())
	}
	for i := 0; i < 50; i++ {
		q.PushFront(NewJobState(job("front")))
	}
	if q.Len() != len(want)+50 {
		t.Fatalf("Len after PushFront = %d", q.Len())
	}
}

// The read-only view follows the queue it was made from and cannot be
// turned back into it.
func TestQueueReadOnly(t *testing.T) {
	a, b, c := NewJobState(job("a")), NewJobState(job("b")), NewJobState(job("c"))
	q := NewQueue(a, b)
	ro := q.ReadOnly()
	if _, ok := ro.(*Queue); ok {
		t.Fatal("the read-only view is the queue itself")
	}
	ids := func(p PendingQueue) (out []string) {
		for s := range p.All() {
			out = append(out, s.Job.ID)
		}
		return out
	}
	if got := ids(ro); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("NewQueue(a, b) holds %v", got)
	}
	q.PushFront(c)
	q.Remove(a)
	if got := ids(ro); !slices.Equal(got, []string{"c", "b"}) || ro.Len() != 2 || ro.Head() != c || !ro.Contains(b) || ro.Contains(a) {
		t.Errorf("view after changes: %v len %d head %v", got, ro.Len(), ro.Head())
	}
}

func TestParseSpec(t *testing.T) {
	nodes, err := ParseSpec("2:cpu=8,mem_gib=30,price=0.4+1:gpu=8,cpu=32,mem_gib=256,role=ps,type=p2")
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 3 || nodes[0].Capacity != resource.New(8, 30, 0) || nodes[2].Role != "ps" || nodes[2].InstanceType != "p2" || nodes[0].PricePerHour != 0.4 {
		t.Fatalf("unexpected nodes %+v", nodes)
	}
	if nodes[0].Name == nodes[1].Name {
		t.Fatal("node names not unique")
	}
	for _, bad := range []string{"", "x:cpu=1", "0:cpu=1", "2", "2:cpu", "2:cpu=-1", "2:tpu=1", "2:role=ps", "2:cpu=NaN"} {
		if _, err := ParseSpec(bad); err == nil {
			t.Errorf("ParseSpec(%q) succeeded", bad)
		}
	}
}

func TestParseSpecLabelsAndTaints(t *testing.T) {
	nodes, err := ParseSpec("2:gpu=8,label=pool=team-a,label=zone=b,taint=dedicated=team-a:NoSchedule,taint=gpu:NoExecute+1:gpu=8")
	if err != nil {
		t.Fatal(err)
	}
	wantTaints := []Taint{{Key: "dedicated", Value: "team-a", Effect: TaintNoSchedule}, {Key: "gpu", Effect: TaintNoExecute}}
	if len(nodes) != 3 || nodes[1].Labels["pool"] != "team-a" || nodes[1].Labels["zone"] != "b" || !slices.Equal(nodes[0].Taints, wantTaints) {
		t.Fatalf("pool nodes %+v", nodes[:2])
	}
	if nodes[2].Labels != nil || nodes[2].Taints != nil {
		t.Fatalf("plain node got %+v", nodes[2])
	}
	if tt, ok := nodes[0].HardTaint(); !ok || tt.Key != "dedicated" {
		t.Errorf("HardTaint = %v %v", tt, ok)
	}
	for _, bad := range []string{"1:gpu=1,label=pool", "1:gpu=1,label==x", "1:gpu=1,taint=a=b", "1:gpu=1,taint=a:Never", "1:gpu=1,taint=:NoSchedule", "1:gpu=1,label=a=b,label=a=c"} {
		if _, err := ParseSpec(bad); err == nil {
			t.Errorf("ParseSpec(%q) succeeded", bad)
		}
	}
}

// FuzzParseSpec: a parsed spec has capacity on every node and only hard or
// soft taints with a key; never a panic.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"2:gpu=8,cpu=48", "1:gpu=8,label=a=b,taint=k=v:NoSchedule+3:cpu=1,role=ps", "1:gpu=1,taint=k:Nope", "x", "1:cpu=1e13"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 200 {
			return // counts up to a million nodes are valid; keep the fuzzer fast
		}
		nodes, err := ParseSpec(s)
		if err != nil {
			return
		}
		for _, n := range nodes {
			if n.Capacity.IsZero() || n.Capacity.AnyNegative() {
				t.Fatalf("%q: node %s capacity %v", s, n.Name, n.Capacity)
			}
			for _, tt := range n.Taints {
				if tt.Key == "" || tt.Effect != TaintNoSchedule && tt.Effect != TaintNoExecute && tt.Effect != TaintPreferNoSchedule {
					t.Fatalf("%q: taint %+v", s, tt)
				}
			}
		}
	})
}

func TestEligibilitySets(t *testing.T) {
	var nodes []*NodeState
	for i := range 70 { // more than one word of bits
		n := Node{Name: "n"}
		if i%3 == 0 {
			n.Taints = []Taint{{Key: "k", Effect: TaintNoSchedule}}
		}
		if i%5 == 0 {
			n.Taints = append(n.Taints, Taint{Key: "soft", Effect: TaintPreferNoSchedule})
		}
		nodes = append(nodes, &NodeState{Node: n, Index: i})
	}
	e := NewEligibility()
	if s := e.Set(nodes[1:3], nil); !s.All() {
		t.Errorf("untainted nodes: %+v, want All", s)
	}
	s := e.Set(nodes, nil)
	for i := range nodes {
		if s.Has(i) != (i%3 != 0) {
			t.Fatalf("node %d: Has %v", i, s.Has(i))
		}
	}
	if s.Len() != 46 {
		t.Errorf("Len = %d, want 46", s.Len())
	}
	e.Reset()
	if s := e.Set(nodes[1:3], nil); !s.All() {
		t.Errorf("after Reset: %+v, want All", s)
	}
}

func TestPlacementHelpers(t *testing.T) {
	j := &Job{Groups: []ReplicaGroup{{Demand: resource.New(1, 0, 0)}, {Demand: resource.New(0, 1, 0)}}}
	p := Placement{{Group: 0, Node: 3}, {Group: 0, Node: 1}, {Group: 1, Node: 3}}
	if got := p.Counts(2); !slices.Equal(got, []int{2, 1}) {
		t.Errorf("Counts = %v", got)
	}
	if got := p.Nodes(); !slices.Equal(got, []int{3, 1}) {
		t.Errorf("Nodes = %v", got)
	}
	if got := p.DemandOn(j)[3]; got != resource.New(1, 1, 0) {
		t.Errorf("DemandOn[3] = %v", got)
	}
}

func TestModels(t *testing.T) {
	j := job("j")
	if got := j.SpeedAt([]int{2}, 1); got != 1 {
		t.Errorf("speed at requested = %v", got)
	}
	if got := j.SpeedAt([]int{4}, 2); got != 2 {
		t.Errorf("speed at double = %v", got)
	}
	if got := j.SpeedAt([]int{0}, 0); got != 0 {
		t.Errorf("speed below min = %v", got)
	}
	s := Sigmoid{G1: 10, G2: 0.01, G3: 1000}
	if v := s.Value(1000); v != 5 {
		t.Errorf("sigmoid at target = %v, want 5", v)
	}
	if s.Value(0) <= s.Value(2000) {
		t.Error("sigmoid does not decay")
	}
	c := ExpCurve{Start: 5, Floor: 1, Rate: 5, Noise: 0.05}
	if a, b := c.Sample(0.3, 7, 2), c.Sample(0.3, 7, 2); a != b {
		t.Error("samples are not reproducible")
	}
	if c.Sample(0, 1, 0) < c.Sample(1, 1, 1) {
		t.Error("curve does not fall")
	}
	for i := uint64(0); i < 1000; i++ {
		if u := Uniform(i, 3); u < -1 || u >= 1 {
			t.Fatalf("Uniform out of range: %v", u)
		}
	}
}

// TestQueueInEnqueuedOrder checks the queue's account of its Enqueued
// order against a scan after every push and removal, on queues driven as
// the simulator drives its own (arrivals at the tail with the time, the
// preempted at the head with the time, starts from anywhere) and on
// random ones, with ties and NaN.
func TestQueueInEnqueuedOrder(t *testing.T) {
	scan := func(q *Queue) bool {
		var prev *JobState
		for s := range q.All() {
			if prev != nil && cmp.Compare(prev.Enqueued, s.Enqueued) > 0 {
				return false
			}
			prev = s
		}
		return true
	}
	for seed := uint64(1); seed <= 20; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		q := NewQueue()
		var live []*JobState
		now := 0.0
		ins, outs := 0, 0
		for step := range 2000 {
			switch k := r.IntN(10); {
			case k < 4 || len(live) == 0:
				s := NewJobState(job(fmt.Sprint(step)))
				s.Enqueued = now
				switch {
				case seed > 10:
					s.Enqueued = []float64{math.NaN(), 0, 1, 2, 3}[r.IntN(5)]
				case r.IntN(20) == 0:
					s.Enqueued = now - 1 // an executor whose times are not monotone
				}
				if r.IntN(8) == 0 {
					q.PushFront(s)
				} else {
					q.PushBack(s)
				}
				live = append(live, s)
			case k < 5:
				now += float64(r.IntN(3))
			default:
				i := r.IntN(len(live))
				q.Remove(live[i])
				live = slices.Delete(live, i, i+1)
			}
			if r.IntN(3) > 0 {
				continue // not asked after every change
			}
			want := scan(q)
			if got := q.InEnqueuedOrder(); got != want {
				t.Fatalf("seed %d step %d: InEnqueuedOrder() = %v, the queue's %d jobs are in order: %v", seed, step, got, q.Len(), want)
			}
			if want {
				ins++
			} else {
				outs++
			}
		}
		if ins == 0 || outs == 0 {
			t.Errorf("seed %d: %d answers in order, %d out of order: both are to be checked", seed, ins, outs)
		}
	}
}

// The queue's log (QueueLog) replays its pushes and removals since a mark,
// through the read-only view too; a mark the log no longer reaches is
// refused; Renumbered changes whenever Order's numbers may have, and Order
// keeps queue order in between.
func TestQueueLog(t *testing.T) {
	a, b, c := NewJobState(job("a")), NewJobState(job("b")), NewJobState(job("c"))
	q := NewQueue(a)
	ql := q.ReadOnly().(QueueLog)
	type change struct {
		id     string
		pushed bool
	}
	since := func(mark uint64) ([]change, bool) {
		var out []change
		ok := ql.Since(mark, func(js *JobState, pushed bool) { out = append(out, change{js.Job.ID, pushed}) })
		return out, ok
	}
	m0 := ql.Mark()
	q.PushBack(b)
	q.Remove(a)
	q.PushFront(c)
	got, ok := since(m0)
	if want := []change{{"b", true}, {"a", false}, {"c", true}}; !ok || !slices.Equal(got, want) {
		t.Fatalf("Since(mark) = %v, %v; want %v", got, ok, want)
	}
	if got, ok := since(ql.Mark()); !ok || len(got) != 0 {
		t.Errorf("Since(Mark()) = %v, %v; want nothing", got, ok)
	}
	if _, ok := since(ql.Mark() + 1); ok {
		t.Error("Since a mark not given yet succeeded")
	}
	// Many changes: a recent mark still replays; once the log holds twice
	// as many changes as queued jobs it drops its front, and an old mark
	// is refused.
	var st []*JobState
	for i := range 3000 {
		s := NewJobState(job("x" + string(rune('a'+i%26))))
		st = append(st, s)
		q.PushBack(s)
	}
	recent := ql.Mark()
	n0 := ql.Renumbered()
	for _, s := range st[:500] {
		q.Remove(s)
	}
	if got, ok := since(recent); !ok || len(got) != 500 {
		t.Errorf("Since(recent) gave %d changes, %v; want 500", len(got), ok)
	}
	if ql.Renumbered() != n0 {
		t.Error("Renumbered changed by removals that did not compact")
	}
	for _, s := range st[500:2990] {
		q.Remove(s) // compacts along the way
	}
	if ql.Renumbered() == n0 {
		t.Error("Renumbered unchanged after compaction")
	}
	if _, ok := since(m0); ok {
		t.Error("Since an old mark succeeded after thousands of changes")
	}
	n1 := ql.Renumbered()
	prev := -1
	for s := range q.All() {
		i, ok := q.Order(s)
		if !ok || i <= prev {
			t.Fatalf("Order(%s) = %d, %v after %d", s.Job.ID, i, ok, prev)
		}
		prev = i
	}
	q.PushBack(NewJobState(job("y")))
	if ql.Renumbered() != n1 {
		t.Error("Renumbered changed by a PushBack")
	}
}

// What a policy may read of the run time: the estimate times the fraction
// not yet done, exactly Remaining when no estimate was drawn (Estimate 0,
// or equal to Work); the truth stays in Remaining and TimeLeft.
func TestEstimatedRemaining(t *testing.T) {
	type got struct {
		Work, Remaining, TimeLeft, Attained, Progress float64
		EstWork, EstRemaining, EstTimeLeft, Scale     float64
	}
	tests := []struct {
		name     string
		estimate float64
		rate     float64
		want     got
	}{
		// Work 100, 40 done at now: 60 left, speed 2.
		{"exact (0)", 0, 2, got{100, 60, 30, 40, 0.4, 100, 60, 30, 1}},
		{"exact (= Work)", 100, 2, got{100, 60, 30, 40, 0.4, 100, 60, 30, 1}},
		{"over by half", 150, 2, got{100, 60, 30, 40, 0.4, 150, 90, 45, 1.5}},
		{"under by half", 50, 2, got{100, 60, 30, 40, 0.4, 50, 30, 15, 0.5}},
		{"not progressing", 50, 0, got{100, 60, math.Inf(1), 40, 0.4, 50, 30, math.Inf(1), 0.5}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := job("j")
			j.Estimate = tc.estimate
			js := NewJobState(j)
			js.WorkLeft, js.Rate, js.Updated = 60, tc.rate, 10
			now := 10.0
			g := got{j.Work, js.Remaining(now), js.TimeLeft(now), js.Attained(now), js.Progress(now),
				j.EstimatedWork(), js.EstimatedRemaining(now), js.EstimatedTimeLeft(now), j.EstimateScale()}
			if g != tc.want {
				t.Errorf("got %+v\nwant %+v", g, tc.want)
			}
		})
	}
	// With no estimate drawn EstimatedRemaining is Remaining bit for bit,
	// where Work * (Remaining / Work) need not be.
	j := job("j")
	j.Work = 3
	js := NewJobState(j)
	js.WorkLeft, js.Rate, js.Updated = 1, 0.3, 0
	for _, e := range []float64{0, 3} {
		j.Estimate = e
		if r, er := js.Remaining(0.7), js.EstimatedRemaining(0.7); r != er {
			t.Errorf("Estimate %v: EstimatedRemaining %v, Remaining %v", e, er, r)
		}
	}
}
