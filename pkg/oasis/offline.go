package oasis

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/resource"
)

// Offline is the exact offline optimum of the paper's problem (1) for a
// small instance: every job known in advance, worker and PS counts per
// server and slot chosen freely (within capacity, N, the bandwidth rule and
// PSs <= workers), utility f_i at the end of the completion slot, jobs that
// do not finish earn nothing. The paper solves its ILP with a solver; we
// use a dynamic program over slots whose state is each job's remaining
// worker-slots (memoised), choosing in every slot each active job's worker
// count and checking the slot's packing onto the servers exactly. It is
// exponential: meant for about 10 jobs and a dozen slots.
type Offline struct {
	Slot     float64
	Slots    int
	MaxState int // give up beyond this many memoised states (0: 2,000,000)

	jobs  []offJob
	pools [2][]resource.Vector // worker and PS server capacities
	total [2]resource.Vector
	memo  map[string]float64 // best utility so far on reaching a state
	packs map[string]bool
	best  float64
	// Incumbent is a known achievable utility (OASiS's); it only speeds
	// up the search.
	Incumbent float64
	// States is the number of memoised states explored.
	States int
}

type offJob struct {
	j      *cluster.Job
	arrive int
	W, N   int
	ps     []int // ps[w], -1 when w workers are not allowed
	dw, dp resource.Vector
	util   []float64
}

// ErrTooLarge is returned when the instance exceeds the state budget.
var ErrTooLarge = errors.New("offline optimum: instance too large for the exact search")

// Solve returns the optimal total utility.
func (o *Offline) Solve(jobs []*cluster.Job, nodes []cluster.Node) (float64, error) {
	if o.MaxState == 0 {
		o.MaxState = 2_000_000
	}
	o.jobs = o.jobs[:0]
	o.pools = [2][]resource.Vector{}
	for _, n := range nodes {
		switch n.Role {
		case RoleWorker:
			o.pools[0] = append(o.pools[0], n.Capacity)
		case RolePS:
			o.pools[1] = append(o.pools[1], n.Capacity)
		}
	}
	o.total = [2]resource.Vector{}
	for p := range o.pools {
		for _, c := range o.pools[p] {
			o.total[p] = o.total[p].Add(c)
		}
	}
	for _, j := range jobs {
		if err := CheckJob(j); err != nil {
			return 0, err
		}
		oj := offJob{j: j, arrive: arrivalSlot(j.Submit, o.Slot), W: WorkerSlots(j.PS, o.Slot), N: j.PS.Chunks,
			dw: j.Groups[GWorker].Demand, dp: j.Groups[GPS].Demand}
		oj.N = min(oj.N, oj.W)
		if oj.W > 255 {
			return 0, fmt.Errorf("job %s: %d worker-slots: %w", j.ID, oj.W, ErrTooLarge)
		}
		oj.ps = make([]int, oj.N+1)
		for w := 1; w <= oj.N; w++ {
			ps, ok := PSFor(j.PS, w)
			if !ok {
				ps = -1
			}
			oj.ps[w] = ps
		}
		oj.util = make([]float64, o.Slots)
		for t := range oj.util {
			oj.util[t] = utility(j, float64(t+1)*o.Slot-j.Submit)
		}
		o.jobs = append(o.jobs, oj)
	}
	o.memo = map[string]float64{}
	o.packs = map[string]bool{}
	rem := make([]byte, len(o.jobs))
	for i := range o.jobs {
		rem[i] = byte(o.jobs[i].W)
	}
	o.best = o.Incumbent - 1e-9
	err := o.search(0, rem, 0)
	o.States = len(o.memo)
	return math.Max(o.best, 0), err
}

// search is a depth-first branch and bound over slots: in slot t every
// active job gets a worker count; a branch is cut when its utility so far
// plus an optimistic bound (every unfinished job at its earliest possible
// completion) cannot beat the best found, or when the same (slot,
// remaining work) state was reached before with at least as much utility
// (the future depends only on that state).
func (o *Offline) search(t int, rem []byte, acc float64) error {
	if acc+o.bound(t, rem) <= o.best {
		return nil
	}
	if t >= o.Slots {
		o.best = acc
		return nil
	}
	key := string(append([]byte{byte(t), byte(t >> 8)}, rem...))
	if v, ok := o.memo[key]; ok && v >= acc {
		return nil
	}
	if len(o.memo) >= o.MaxState {
		return ErrTooLarge
	}
	o.memo[key] = acc
	var active []int
	for i := range o.jobs {
		if rem[i] > 0 && o.jobs[i].arrive <= t {
			active = append(active, i)
		}
	}
	w := make([]int, len(o.jobs))
	var need [2]resource.Vector
	var rec func(k int) error
	rec = func(k int) error {
		if k == len(active) {
			if !o.fits(w) {
				return nil
			}
			next := append([]byte(nil), rem...)
			gain := 0.0
			for _, i := range active {
				next[i] -= byte(w[i])
				if next[i] == 0 {
					gain += o.jobs[i].util[t]
				}
			}
			return o.search(t+1, next, acc+gain)
		}
		i := active[k]
		jb := &o.jobs[i]
		for x := min(jb.N, int(rem[i])); x >= 0; x-- {
			if x > 0 && jb.ps[x] < 0 {
				continue
			}
			// quick necessary condition: each pool's summed demand
			// within its summed capacity
			nw := need[0].Add(jb.dw.Scale(int64(x)))
			np := need[1]
			if x > 0 {
				np = np.Add(jb.dp.Scale(int64(jb.ps[x])))
			}
			if !nw.Fits(o.total[0]) || !np.Fits(o.total[1]) {
				continue
			}
			w[i] = x
			saved := need
			need = [2]resource.Vector{nw, np}
			err := rec(k + 1)
			need = saved
			if err != nil {
				return err
			}
		}
		w[i] = 0
		return nil
	}
	return rec(0)
}

// bound is the utility every unfinished job would earn at its earliest
// possible completion from slot t.
func (o *Offline) bound(t int, rem []byte) float64 {
	b := 0.0
	for i := range o.jobs {
		if rem[i] == 0 {
			continue
		}
		jb := &o.jobs[i]
		end := max(t, jb.arrive) + (int(rem[i])+jb.N-1)/jb.N - 1
		if end < o.Slots {
			b += jb.util[end]
		}
	}
	return b
}

func (o *Offline) demand(i, pool int) resource.Vector {
	if pool == 0 {
		return o.jobs[i].j.Groups[GWorker].Demand
	}
	return o.jobs[i].j.Groups[GPS].Demand
}

func (o *Offline) count(i, pool, w int) int {
	if pool == 0 {
		return w
	}
	return o.jobs[i].ps[w]
}

// fits checks the slot's exact packing of every pool (memoised by counts).
func (o *Offline) fits(w []int) bool {
	key := make([]byte, len(w))
	for i, x := range w {
		key[i] = byte(x)
	}
	if v, ok := o.packs[string(key)]; ok {
		return v
	}
	ok := true
	for pool := 0; pool < 2 && ok; pool++ {
		var items []resource.Vector
		for i, x := range w {
			for k := 0; k < o.count(i, pool, x) && x > 0; k++ {
				items = append(items, o.demand(i, pool))
			}
		}
		// Largest first (by summed normalised size) finds failures early.
		slices.SortStableFunc(items, func(a, b resource.Vector) int { return cmp.Compare(size(b), size(a)) })
		free := append([]resource.Vector(nil), o.pools[pool]...)
		ok = pack(items, free, 0, 0)
	}
	o.packs[string(key)] = ok
	return ok
}

// pack places items[k:] into bins, identical consecutive items on
// non-decreasing bins and never two bins with the same free capacity tried
// for one item (symmetry breaking).
func pack(items, free []resource.Vector, k, from int) bool {
	if k == len(items) {
		return true
	}
	start := 0
	if k > 0 && items[k] == items[k-1] {
		start = from
	}
	for b := start; b < len(free); b++ {
		if !items[k].Fits(free[b]) {
			continue
		}
		dup := false
		for c := start; c < b; c++ {
			if free[c] == free[b] {
				dup = true
				break
			}
		}
		if dup {
			continue
		}
		free[b] = free[b].Sub(items[k])
		ok := pack(items, free, k+1, b)
		free[b] = free[b].Add(items[k])
		if ok {
			return true
		}
	}
	return false
}

func size(v resource.Vector) float64 {
	s := 0.0
	for _, x := range v {
		s += float64(x)
	}
	return s
}
