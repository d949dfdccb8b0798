package oasis

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/resource"
)

// perKind builds a per-resource vector of bounds from named values.
func perKind(cpu, mem, gpu, stor, bw float64) [resource.NumKinds]float64 {
	var v [resource.NumKinds]float64
	v[resource.CPU], v[resource.Memory], v[resource.GPU], v[resource.Storage], v[resource.Bandwidth] = cpu, mem, gpu, stor, bw
	return v
}

// TestComputeBoundsPerUnitResource: U is the best utility per unit of
// resource of one replica (the paper's Eq. (23)-(24), which Appendix A
// needs), not per unit of resource-slot; L is the utility at the horizon
// per unit of the most resource-time the job could hold.
//
// The job: 8 worker-slots, N = 4, one PS for 4 workers (2 PS-slots at
// full width), constant utility g1/2 = 5. Worker server (32 cores, 64 GiB,
// 4 GPUs, 1000 GB, 10 Gbps); a worker takes 2 cores, 4 GiB, 1 GPU, 5 GB,
// 800 Mbps, so its normalised demand is 1/16, 1/16, 1/4, 1/200, 2/25; a PS
// takes 2 cores, 4 GiB, 5 GB, 3200 Mbps of a PS server of the same size.
func TestComputeBoundsPerUnitResource(t *testing.T) {
	nodes := smallCluster(1, 1, 4)
	j := psJob("j", 0, 8, 4, 100, 400, cluster.Sigmoid{G1: 10})
	const f = 5.0 // utility at any completion
	sumW := 1.0/16 + 1.0/16 + 1.0/4 + 1.0/200 + 2.0/25
	sumP := 1.0/16 + 1.0/16 + 1.0/200 + 8.0/25
	tests := []struct {
		name string
		got  func() Bounds
		want Bounds
	}{
		{"paper: per unit of resource (ComputeBounds)",
			func() Bounds { return ComputeBounds([]*cluster.Job{j}, nodes, 3600, 10) },
			Bounds{UW: perKind(f*16, f*16, f*4, f*200, f*25/2), UP: perKind(f*16, f*16, 0, f*200, f*25/8),
				LW: f / (10 * 4 * sumW), LP: f / (10 * 4 * sumP)}},
		{"earlier: per unit of resource-slot (8 worker-slots, 2 PS-slots)",
			func() Bounds { return ComputeBoundsAs([]*cluster.Job{j}, nodes, 3600, 10, UPerResourceSlot) },
			Bounds{UW: perKind(f*16/8, f*16/8, f*4/8, f*200/8, f*25/2/8), UP: perKind(f*16/2, f*16/2, 0, f*200/2, f*25/8/2),
				LW: f / (10 * 4 * sumW), LP: f / (10 * 4 * sumP)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, tc.got(), cmpopts.EquateApprox(1e-12, 0)); d != "" {
				t.Errorf("bounds (-want +got):\n%s", d)
			}
		})
	}
}

// TestBoundsAppendixA checks the property Appendix A proves the price
// functions have, on the experiments' workload: when resource r is
// exhausted on a server its price is U[r], and one replica of any job there
// then costs at least the most the job can earn, U[r] * w_i^r >=
// f_i(t_hat_i), so no job is admitted onto it.
func TestBoundsAppendixA(t *testing.T) {
	st := DefaultSetting(200, 40, 20, 100)
	for _, seed := range []uint64{1, 2} {
		jobs, nodes := st.Generate(seed), st.Nodes(seed)
		b := ComputeBounds(jobs, nodes, st.Slot, st.Slots)
		ns := make([]*cluster.NodeState, len(nodes))
		for i := range nodes {
			ns[i] = &cluster.NodeState{Node: nodes[i], Index: i}
		}
		wp, pp := newPool(ns, RoleWorker), newPool(ns, RolePS)
		for _, j := range jobs {
			W := WorkerSlots(j.PS, st.Slot)
			a := arrivalSlot(j.Submit, st.Slot)
			best := utility(j, float64(a+(W+j.PS.Chunks-1)/j.PS.Chunks)*st.Slot-j.Submit)
			dw, dp := wp.norm(j.Groups[GWorker].Demand), pp.norm(j.Groups[GPS].Demand)
			for r := range dw {
				if dw[r] > 0 && b.UW[r]*dw[r] < best*(1-1e-12) {
					t.Fatalf("seed %d %s: worker %v: U*w = %v below the job's best utility %v", seed, j.ID, resource.Kind(r), b.UW[r]*dw[r], best)
				}
				if dp[r] > 0 && b.UP[r]*dp[r] < best*(1-1e-12) {
					t.Fatalf("seed %d %s: PS %v: U*s = %v below the job's best utility %v", seed, j.ID, resource.Kind(r), b.UP[r]*dp[r], best)
				}
			}
		}
	}
}

// TestDefaultSettingKeepsL: under the experiments' utility ranges L is the
// jobs' own (every job keeps at least 1/(1+e^7) of its priority at the
// horizon, and the 1e-12 floor does not bind); under the earlier ranges a
// time-critical job's utility at the horizon vanishes and the floor sets L.
func TestDefaultSettingKeepsL(t *testing.T) {
	tests := []struct {
		name    string
		st      Setting
		floored bool
	}{
		{"default: decay per timespan", DefaultSetting(800, 40, 20, 100), false},
		{"quick scale", DefaultSetting(120, 10, 5, 30), false},
		{"ratio instances", RatioSetting(3, 100), false},
		{"earlier: decay per slot", DefaultSetting(800, 40, 20, 100).EarlierUtility(), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, seed := range []uint64{1, 2, 3} {
				jobs, nodes := tc.st.Generate(seed), tc.st.Nodes(seed)
				raw := ComputeBoundsFloor(jobs, nodes, tc.st.Slot, tc.st.Slots, UPerResource, 0)
				floored := math.Min(raw.LW, raw.LP) < DefaultLFloor*raw.MaxU()
				if floored != tc.floored {
					t.Errorf("seed %d: L %v of max U %v floored = %v, want %v", seed, math.Min(raw.LW, raw.LP), raw.MaxU(), floored, tc.floored)
				}
				if tc.floored {
					continue
				}
				for _, j := range jobs {
					if h := utility(j, float64(tc.st.Slots)*tc.st.Slot-j.Submit) / priority(j); h < 1/(1+math.Exp(7))*(1-1e-9) {
						t.Fatalf("seed %d %s: keeps %v of its priority at the horizon", seed, j.ID, h)
					}
				}
			}
		})
	}
}

// TestOASiSParams: the oasis plugin's parameters are validated and
// bounded.
func TestOASiSParams(t *testing.T) {
	const given = "uw=1/1/1/1/1;up=1/1/1/1/1;lw=0.1;lp=0.1"
	tests := []struct {
		spec    string
		wantErr bool
		u       UReading
		floor   float64
	}{
		{"", false, UPerResource, DefaultLFloor},
		{"ubound=resource", false, UPerResource, DefaultLFloor},
		{"ubound=resource-slot;lfloor=1e-4", false, UPerResourceSlot, 1e-4},
		{"lfloor=1", false, UPerResource, 1},
		{"ubound=slot", true, 0, 0},
		{"lfloor=0", true, 0, 0},
		{"lfloor=-1e-4", true, 0, 0},
		{"lfloor=2", true, 0, 0},
		{given + ";lfloor=1e-3", false, UPerResource, 1e-3},
		{given + ";ubound=resource-slot", true, 0, 0}, // ubound is for learned bounds
	}
	for _, tc := range tests {
		t.Run(tc.spec, func(t *testing.T) {
			o, err := newOASiS(paramsOf(t, "oasis:"+tc.spec))
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if d := cmp.Diff([]any{tc.u, tc.floor}, []any{o.cfg.U, o.cfg.LFloor}); d != "" {
				t.Errorf("(ubound, lfloor) (-want +got):\n%s", d)
			}
		})
	}
}

// paramsOf parses a policy spec's parameters.
func paramsOf(t *testing.T, spec string) policy.Params {
	t.Helper()
	_, p, err := policy.ParseSpec(strings.TrimSuffix(spec, ":"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}
