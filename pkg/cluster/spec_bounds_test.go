package cluster

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// ParseSpec refuses what it used to accept silently or misreport (issue 17
// item 10), naming the pool and the key.
func TestParseSpecBounds(t *testing.T) {
	tests := []struct{ spec, want string }{
		{"1:gpu=8,role=bogus", `cluster spec pool 1: role="bogus": want worker or ps (the replica groups of trace jobs; omit role for nodes that run anything)`},
		{"1:gpu=8,gpu=4", "cluster spec pool 1: key gpu given twice"},
		{"1:gpu=8,role=ps,role=worker", "cluster spec pool 1: key role given twice"},
		{"1:cpu=1e-9", `cluster spec pool 1: cpu="1e-9" rounds to 0 (the smallest amount is 0.001)`},
		{"1:mem_gib=1e-12", `cluster spec pool 1: mem_gib="1e-12" rounds to 0 (the smallest amount is 9.313225746154785e-10)`},
		{"1:mem_gib=1e12", `cluster spec pool 1: mem_gib="1e12" is outside [0, 1e+06]`},
		{"1:gpu=-1", `cluster spec pool 1: gpu="-1" is outside [0, 1e+06]`},
		{"1:gpu=NaN", `cluster spec pool 1: gpu="NaN" is not a number`},
		{"1000001:gpu=1", "cluster spec pool 1: count 1000001 brings the cluster to 1000001 nodes, above the limit 1000000"},
		{"600000:gpu=1+600000:gpu=1", "cluster spec pool 2: count 600000 brings the cluster to 1200000 nodes, above the limit 1000000"},
		{"0:gpu=1", `cluster spec pool 1: count "0" is not a positive integer`},
		{"1000000:mem_gib=1e6", "cluster spec pool 1: the cluster's total memory exceeds 9.223372036854776e+15 units (int64 headroom for sums)"},
		{"1:gpu=1,color=red", `cluster spec pool 1: unknown key "color" (want cpu, mem_gib, gpu, storage_gib, bandwidth_mbps, price, role, type, group, label, taint)`},
		{"2:gpu=8,cpu=48,mem_gib=384,role=worker,label=a=b,label=c=d", ""},
	}
	for _, tc := range tests {
		got := ""
		if _, err := ParseSpec(tc.spec); err != nil {
			got = err.Error()
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("ParseSpec(%q) (-want +got):\n%s", tc.spec, d)
		}
	}
}
