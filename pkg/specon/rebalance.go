package specon

import (
	"cmp"
	"slices"
)

// Movable is a container Alg. 3 may move, with its duration
// d = t - t_c: the Speculator passes the jobs marked migrated by Alg. 2
// (t_c the time of the mark, the paper's reading) or the CC jobs (t_c the
// time they entered CC, Params.Candidates converged), never a job already
// moved once.
type Movable struct {
	ID       string
	Worker   int // index into the worker list given to Rebalance
	Duration float64
}

// Move is a rebalancing decision: container ID from worker From to To
// (indices into the worker list).
type Move struct {
	ID       string
	From, To int
}

// Rebalance is Alg. 3. active[i] is |w_i|, the number of containers on
// worker i; cands are the containers that may move. The balance factor is
// bf = floor(sum |w_i| / |W|).
//
//   - When some workers are idle (T non-empty, lines 10-18), each idle
//     worker, while it holds fewer than bf containers, receives the
//     candidate with the smallest duration.
//   - Otherwise (lines 19-31), T becomes the workers holding fewer than
//     bf-1 containers, and each of them, while it still does, receives the
//     candidate with the smallest duration among those on workers outside
//     T.
//
// The smallest duration is the job marked (or converged) most recently:
// the paper's proxy for the one with the most training still ahead of it,
// which benefits most from a less crowded worker.
//
// Two readings where the pseudo-code is loose:
//
//   - Line 27 tests |w_i| < bf-1, and after lines 23-25 w_i is a worker
//     outside T, the source of c_j. Every worker outside T holds at least
//     bf-1 containers (that is how lines 20-22 built T), so read that way
//     the test never holds and lines 19-31 never move anything. The text
//     says the job goes to "w_i which has room for an additional
//     container", the target, so we test the target's count.
//   - In the idle branch we take a candidate only from a worker that holds
//     at least two containers: moving a worker's only container to an
//     idle worker just swaps which worker is idle and costs a checkpoint.
//
// Ties in duration go to the lower ID, workers are visited in index
// order.
func Rebalance(active []int, cands []Movable) []Move {
	n := len(active)
	if n == 0 || len(cands) == 0 {
		return nil
	}
	count := slices.Clone(active)
	sum := 0
	var idle []int
	for i, a := range count {
		sum += a
		if a == 0 {
			idle = append(idle, i)
		}
	}
	bf := sum / n
	pool := slices.Clone(cands)
	slices.SortStableFunc(pool, func(a, b Movable) int {
		return cmp.Or(cmp.Compare(a.Duration, b.Duration), cmp.Compare(a.ID, b.ID))
	})
	take := func(ok func(Movable) bool) (Movable, bool) {
		for k, c := range pool {
			if ok(c) {
				pool = slices.Delete(pool, k, k+1)
				return c, true
			}
		}
		return Movable{}, false
	}
	var moves []Move
	if len(idle) > 0 {
		for _, w := range idle {
			if count[w] >= bf {
				continue
			}
			c, ok := take(func(c Movable) bool { return count[c.Worker] >= 2 })
			if !ok {
				break
			}
			moves = append(moves, Move{ID: c.ID, From: c.Worker, To: w})
			count[c.Worker]--
			count[w]++
		}
		return moves
	}
	var t []int
	inT := make([]bool, n)
	for i, a := range count {
		if a < bf-1 {
			t = append(t, i)
			inT[i] = true
		}
	}
	for _, w := range t {
		if count[w] >= bf-1 {
			continue
		}
		c, ok := take(func(c Movable) bool { return !inT[c.Worker] })
		if !ok {
			break
		}
		moves = append(moves, Move{ID: c.ID, From: c.Worker, To: w})
		count[c.Worker]--
		count[w]++
	}
	return moves
}
