package sim

import "container/heap"

type eventKind uint8

// Event kinds, in the order they are handled when they fall at the same
// time: completions free resources before anything else looks at them.
const (
	evComplete eventKind = iota
	evGraceEnd
	evPauseEnd
	evNodeReady
	evScaleDown // the autoscaler model's check for nodes empty long enough
	evSample
)

type event struct {
	t    float64
	kind eventKind
	seq  uint64
	job  *jobRT
	ver  uint32 // job version when scheduled; stale events are skipped
	node int
}

type eventHeap []event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	a, b := &h[i], &h[j]
	if a.t != b.t {
		return a.t < b.t
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	return a.seq < b.seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

func (s *Sim) push(e event) {
	s.seq++
	e.seq = s.seq
	heap.Push(&s.events, e)
}
