package queue

import (
	"cmp"
	"container/heap"
)

// backoff is the backoff set (kube-scheduler's backoffQ): jobs woken by an
// event before their backoff ended, by the time it ends.
type backoff struct{ h backoffHeap }

// backoffItem is one job in the heap, with the time it was pushed for: a
// job that left the set and came back has a newer item, and the older
// one is dropped when it comes up.
type backoffItem struct {
	until float64
	e     *entry
}

type backoffHeap []backoffItem

func (h backoffHeap) Len() int { return len(h) }
func (h backoffHeap) Less(i, j int) bool {
	if c := cmp.Compare(h[i].until, h[j].until); c != 0 {
		return c < 0
	}
	return h[i].e.job.ID < h[j].e.job.ID
}
func (h backoffHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *backoffHeap) Push(x any)   { *h = append(*h, x.(backoffItem)) }
func (h *backoffHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = backoffItem{}
	*h = old[:len(old)-1]
	return it
}

// add puts e, which is in no set, in the backoff set.
func (b *backoff) add(e *entry) {
	e.at = inBackoff
	heap.Push(&b.h, backoffItem{until: e.backoffUntil, e: e})
}

// remove forgets e, which leaves the set; its item is dropped when it
// comes up.
func (b *backoff) remove(*entry) {}

// pop moves the jobs whose backoff ended by now to the active set.
func (b *backoff) pop(q *Queue, now float64) {
	for len(b.h) > 0 && b.h[0].until <= now {
		it := heap.Pop(&b.h).(backoffItem)
		e := it.e
		if e.at != inBackoff || e.backoffUntil != it.until || q.entries[e.job.ID] != e {
			continue // left the set or the queue since
		}
		q.toActive(e)
	}
}
