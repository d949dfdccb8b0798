package specon

import (
	"cmp"
	"slices"
)

// Weights are Alg. 2's per-category weights. The paper uses wpc=2,
// wwc=1.5, wcc=1: a progressing job weighs most because it gains most
// from the CPU it shares.
type Weights struct{ PC, WC, CC float64 }

// DefaultWeights are the paper's weights (Sec. VI-A2).
var DefaultWeights = Weights{PC: 2, WC: 1.5, CC: 1}

// Score is Alg. 2 line 3: |PC|·wpc + |WC|·wwc + |CC|·wcc.
func (w Weights) Score(n [3]int) float64 {
	return float64(n[PC])*w.PC + float64(n[WC])*w.WC + float64(n[CC])*w.CC
}

// Worker is what Alg. 2 and Alg. 3 see of one worker.
type Worker struct {
	// Node is the worker's index in the snapshot.
	Node int
	// Count holds the number of its containers in each category, the job
	// being placed included when it runs there.
	Count [3]int
	// Usage is R(w, t), the worker's resource consumption, used to break
	// ties among minimum-score workers.
	Usage float64
}

// Active is the number of containers on the worker (|w_i| of Alg. 3).
func (w Worker) Active() int { return w.Count[PC] + w.Count[WC] + w.Count[CC] }

// Choose is Alg. 2 for a converged job on ws[host]: the candidates T are
// the workers of minimum score; the job stays when its host is among them
// (lines 8-10), moves to the only candidate (lines 13-16), or to the
// candidate with the lowest resource consumption (lines 17-21; remaining
// ties go to the lowest node index, for determinism). It returns the index
// in ws of the chosen worker, which is host when the job stays, and the
// candidate set.
func Choose(ws []Worker, host int, w Weights) (target int, cands []int) {
	if len(ws) == 0 {
		return host, nil
	}
	min := w.Score(ws[0].Count)
	for _, x := range ws[1:] {
		if s := w.Score(x.Count); s < min {
			min = s
		}
	}
	for i, x := range ws {
		if w.Score(x.Count) == min {
			cands = append(cands, i)
		}
	}
	if slices.Contains(cands, host) {
		return host, cands
	}
	if len(cands) == 1 {
		return cands[0], cands
	}
	best := slices.MinFunc(cands, func(a, b int) int {
		return cmp.Or(cmp.Compare(ws[a].Usage, ws[b].Usage), cmp.Compare(ws[a].Node, ws[b].Node))
	})
	return best, cands
}
