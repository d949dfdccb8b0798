package specon

import (
	"slices"
	"testing"
)

func TestScore(t *testing.T) {
	if got := DefaultWeights.Score([3]int{2, 1, 3}); got != 2*2+1.5+3 {
		t.Errorf("score = %v", got)
	}
}

// TestChoose covers Alg. 2's stay / single candidate / least-usage rules.
func TestChoose(t *testing.T) {
	w := DefaultWeights
	tests := []struct {
		name   string
		ws     []Worker
		host   int
		want   int
		nCands int
	}{
		{"host has the minimum score: stay (l.8-10)",
			[]Worker{{Node: 1, Count: [3]int{0, 0, 2}}, {Node: 2, Count: [3]int{1, 0, 1}}}, 0, 0, 1},
		{"host ties the minimum: stay",
			[]Worker{{Node: 1, Count: [3]int{1, 0, 0}}, {Node: 2, Count: [3]int{0, 0, 2}}}, 0, 0, 2},
		{"single other candidate: move there (l.13-16)",
			[]Worker{{Node: 1, Count: [3]int{2, 0, 1}}, {Node: 2, Count: [3]int{0, 1, 1}}, {Node: 3, Count: [3]int{1, 1, 0}}}, 0, 1, 1},
		{"CC-heavy worker scores below a PC one with fewer jobs",
			[]Worker{{Node: 1, Count: [3]int{2, 0, 1}}, {Node: 2, Count: [3]int{2, 0, 0}}, {Node: 3, Count: [3]int{0, 0, 3}}}, 0, 2, 1},
		{"several candidates: lowest usage (l.17-21)",
			[]Worker{{Node: 1, Count: [3]int{3, 0, 1}, Usage: 4}, {Node: 2, Count: [3]int{1, 0, 0}, Usage: 3}, {Node: 3, Count: [3]int{0, 0, 2}, Usage: 2}}, 0, 2, 2},
		{"several candidates, equal usage: lowest node index",
			[]Worker{{Node: 1, Count: [3]int{3, 0, 1}, Usage: 4}, {Node: 4, Count: [3]int{1, 0, 0}, Usage: 1}, {Node: 3, Count: [3]int{1, 0, 0}, Usage: 1}}, 0, 2, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, cands := Choose(tc.ws, tc.host, w)
			if got != tc.want || len(cands) != tc.nCands {
				t.Errorf("Choose = %d (candidates %v), want %d with %d candidates", got, cands, tc.want, tc.nCands)
			}
		})
	}
}

// TestRebalance covers both branches of Alg. 3.
func TestRebalance(t *testing.T) {
	tests := []struct {
		name   string
		active []int
		cands  []Movable
		want   []Move
	}{
		{"idle worker takes the most recently converged job",
			[]int{3, 3, 0, 2}, []Movable{{"a", 0, 100}, {"b", 1, 40}, {"c", 3, 10}},
			[]Move{{"c", 3, 2}}},
		{"idle worker: a worker's only job is not moved",
			[]int{1, 3, 0, 1}, []Movable{{"a", 0, 5}, {"b", 1, 60}, {"d", 3, 1}},
			[]Move{{"b", 1, 2}}},
		{"two idle workers, each gets one",
			[]int{4, 4, 0, 0}, []Movable{{"a", 0, 30}, {"b", 1, 20}, {"c", 0, 10}},
			[]Move{{"c", 0, 2}, {"b", 1, 3}}},
		{"idle worker but bf = 0: nothing",
			[]int{1, 0, 0, 0}, []Movable{{"a", 0, 5}}, nil},
		{"no idle worker: fill workers below bf-1 from the others",
			[]int{6, 5, 1, 4}, []Movable{{"a", 0, 50}, {"b", 1, 20}, {"c", 2, 5}, {"d", 3, 30}},
			[]Move{{"b", 1, 2}}},
		{"no idle worker, balanced: nothing",
			[]int{3, 3, 2, 3}, []Movable{{"a", 0, 5}}, nil},
		{"ties in duration break by ID",
			[]int{3, 3, 0}, []Movable{{"z", 0, 7}, {"y", 1, 7}}, []Move{{"y", 1, 2}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Rebalance(tc.active, tc.cands)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Rebalance = %v, want %v", got, tc.want)
			}
		})
	}
}
