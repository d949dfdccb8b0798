package elastic

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/framework"
)

// TestDragonHead: the head of DRAGON's waiting queue is the job enqueued
// earliest, the first in queue order among equals, whether the queue is
// in Enqueued order (the head is the queue's own) or not (a job pushed
// back at the head later), and it starves after StarveAfter.
func TestDragonHead(t *testing.T) {
	type pend struct {
		id       string
		enqueued float64
		front    bool
	}
	tests := []struct {
		name      string
		now       float64
		pending   []pend
		wantHead  string
		wantStarv bool
	}{
		{"in order", 100, []pend{{"a", 10, false}, {"b", 20, false}, {"c", 20, false}}, "a", true},
		{"ties keep queue order", 35, []pend{{"a", 10, false}, {"b", 10, false}, {"c", 20, false}}, "a", false},
		{"pushed back at the head", 100, []pend{{"a", 10, false}, {"b", 20, false}, {"p", 90, true}}, "a", true},
		{"pushed back, earliest", 100, []pend{{"a", 10, false}, {"p", 5, true}}, "p", true},
		{"not starving yet", 39, []pend{{"a", 10, false}, {"p", 90, true}}, "a", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(1, 8, 64).at(tt.now)
			q := w.s.Pending.(*cluster.Queue)
			for _, p := range tt.pending {
				js := cluster.NewJobState(psJob(p.id, 0, 100, 0, 1, 2, 1, 1, 1))
				js.Enqueued = p.enqueued
				if p.front {
					q.PushFront(js)
				} else {
					q.PushBack(js)
				}
			}
			d := &DragonScaleDown{StarveAfter: DefaultStarveAfter}
			c := &framework.Cycle{Snap: w.s, St: &framework.Statement{}}
			var heads []string
			for js := range q.All() {
				if d.Events(c, js) == framework.EventAlways {
					heads = append(heads, js.Job.ID)
				}
			}
			if diff := cmp.Diff([]string{tt.wantHead}, heads); diff != "" {
				t.Errorf("head (-want +got):\n%s", diff)
			}
			if st := d.state(c); (st.hp != nil) != tt.wantStarv {
				t.Errorf("starving head %v, want starving %v", st.hp, tt.wantStarv)
			}
		})
	}
}
