package embed

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/resource"
)

func TestCompareAlg1(t *testing.T) {
	tests := []struct {
		a, b Vec
		want int
	}{
		{Vec{0, 1, 1}, Vec{0, 1, 2}, -1},
		{Vec{0, 96, 384}, Vec{1, 4, 16}, -1}, // GPU first: any CPU job < any GPU type
		{Vec{1, 4, 16}, Vec{0, 96, 384}, 1},
		{Vec{1, 2, 4}, Vec{1, 2, 4}, 0},
		{Vec{1, 8, 1}, Vec{1, 4, 64}, 1}, // CPU decides before memory
		{Vec{0, 0, 0}, Vec{0, 0, 0.5}, -1},
	}
	for _, tc := range tests {
		if got := Compare(tc.a, tc.b); got != tc.want {
			t.Errorf("Compare(%v, %v) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := Compare(tc.b, tc.a); got != -tc.want {
			t.Errorf("Compare(%v, %v) = %d, want %d (antisymmetry)", tc.b, tc.a, got, -tc.want)
		}
	}
}

func TestSortOrdersByCostFactor(t *testing.T) {
	vs := []Vec{{1, 2, 4}, {0, 1, 2}, {0, 1, 1}, {4, 48, 192}, {0, 96, 384}}
	Sort(vs)
	want := []Vec{{0, 1, 1}, {0, 1, 2}, {0, 96, 384}, {1, 2, 4}, {4, 48, 192}}
	if d := cmp.Diff(want, vs); d != "" {
		t.Fatalf("sorted order (-want +got):\n%s", d)
	}
}

func TestEmbedAlg2(t *testing.T) {
	tests := []struct {
		name    string
		demands []Vec
		types   []Vec
		want    []float64
	}{{
		// The paper's Tables 1 and 2. Table 2 prints 1.5 for the first
		// bucket, its memory ratio (3 GiB / 2 GiB); Alg. 2's own last line
		// takes the max over dimensions, and CPU gives 2 cores / 1 core.
		name:    "paper table 1",
		demands: []Vec{{0, 1, 1}, {0, 1, 2}, {1, 2, 4}},
		types:   []Vec{{0, 1, 2}, {1, 2, 4}},
		want:    []float64{2, 1},
	}, {
		name:    "rounded up by dominant resource",
		demands: []Vec{{0, 1, 1}, {0, 1, 1}, {0, 1, 1}},
		types:   []Vec{{0, 2, 8}, {1, 4, 16}},
		want:    []float64{2, 0}, // 3 cores / 2 = 1.5 -> 2
	}, {
		name:    "exact fit goes to its own type",
		demands: []Vec{{0, 2, 8}},
		types:   []Vec{{0, 2, 8}, {0, 4, 16}},
		want:    []float64{1, 0},
	}, {
		name:    "CPU job never buys a GPU type",
		demands: []Vec{{0, 3, 4}},
		types:   []Vec{{0, 2, 8}, {0, 4, 16}, {1, 4, 16}},
		want:    []float64{0, 1, 0},
	}, {
		name: "lexicographically smaller but too big moves on",
		// (1,2,64) < (1,4,16) lexicographically, but needs 64 GiB.
		demands: []Vec{{1, 2, 64}},
		types:   []Vec{{1, 4, 16}, {1, 16, 64}},
		want:    []float64{0, 1},
	}, {
		name:    "float noise does not add a node",
		demands: []Vec{{0, 0.1, 1}, {0, 0.2, 1}, {0, 0.7, 1}},
		types:   []Vec{{0, 1, 4}},
		want:    []float64{1},
	}, {
		name:  "no demand",
		types: []Vec{{0, 1, 4}},
		want:  []float64{0},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Embed(tc.demands, tc.types)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Fatalf("counts (-want +got):\n%s", d)
			}
		})
	}
}

func TestEmbedNoFit(t *testing.T) {
	c := MustAWS("g4dn")
	_, err := c.Embed([]Vec{{1, 4, 16}, {16, 4, 16}})
	if !errors.Is(err, ErrNoFit) {
		t.Fatalf("err = %v, want ErrNoFit", err)
	}
	if !strings.Contains(err.Error(), "demand 1") || !strings.Contains(err.Error(), "gpu=16") {
		t.Errorf("error %q should name the demand", err)
	}
	_, err = Embed([]Vec{{0, -1, 1}}, []Vec{{0, 1, 1}})
	if err == nil || !strings.Contains(err.Error(), "cpu") {
		t.Errorf("negative cpu: err = %v, want one naming cpu", err)
	}
}

func TestAWSCatalog(t *testing.T) {
	all := MustAWS("all")
	if len(all) != 15 {
		t.Fatalf("%d types, want 15", len(all))
	}
	for i := 1; i < len(all); i++ {
		if Less(all[i].Cap, all[i-1].Cap) {
			t.Errorf("catalogue not sorted at %s", all[i].Name)
		}
	}
	if all[0].Name != "m5.large" || all[len(all)-1].Name != "g4dn.metal" {
		t.Errorf("first/last = %s/%s, want m5.large/g4dn.metal", all[0].Name, all[len(all)-1].Name)
	}
	g := MustAWS("g4dn")
	want := []string{"g4dn.xlarge", "g4dn.2xlarge", "g4dn.4xlarge", "g4dn.8xlarge", "g4dn.16xlarge", "g4dn.12xlarge", "g4dn.metal"}
	if d := cmp.Diff(want, g.Names()); d != "" {
		t.Errorf("g4dn order (-want +got):\n%s", d)
	}
	if _, err := AWS("p3"); err == nil {
		t.Error("AWS(p3): want error")
	}
}

func TestParseCatalogErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"header", "a,b\n", "header"},
		{"nan", "name,vcpu,memory_gib,gpu,price_usd_hour\nx,NaN,1,0,1\n", "vcpu"},
		{"negative", "name,vcpu,memory_gib,gpu,price_usd_hour\nx,1,1,-1,1\n", "gpu"},
		{"dup", "name,vcpu,memory_gib,gpu,price_usd_hour\nx,1,1,0,1\nx,1,1,0,1\n", "repeated"},
		{"empty", "name,vcpu,memory_gib,gpu,price_usd_hour\n", "no instance types"},
	}
	for _, tc := range tests {
		_, err := ParseCatalog(strings.NewReader(tc.in), "t.csv")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "t.csv") {
			t.Errorf("%s: err = %v, want one with t.csv and %q", tc.name, err, tc.want)
		}
	}
}

func TestSelectBase(t *testing.T) {
	g := MustAWS("g4dn")
	// Only 8-GPU demand: every smaller type is useless, keep dropping until
	// g4dn.metal.
	big := [][]Vec{{{8, 32, 128}}, {{8, 32, 128}, {8, 32, 128}}}
	b, err := SelectBase(g, big)
	if err != nil {
		t.Fatal(err)
	}
	if b.Catalog[0].Name != "g4dn.metal" {
		t.Errorf("base = %s, want g4dn.metal (scales %v)", b.Catalog[0].Name, b.Scales)
	}
	// 1-GPU demand: g4dn.xlarge is cheapest for it, dropping it would
	// raise the scale, so it is the base.
	small := [][]Vec{{{1, 4, 16}, {8, 32, 128}}}
	b, err = SelectBase(g, small)
	if err != nil {
		t.Fatal(err)
	}
	if b.Catalog[0].Name != "g4dn.xlarge" || len(b.Scales) != 2 || b.Scales[1] <= b.Scales[0] {
		t.Errorf("base = %s scales %v, want g4dn.xlarge and a rising second scale", b.Catalog[0].Name, b.Scales)
	}
	// Mixed catalogue, GPU-only demand: all m5 types are dropped.
	b, err = SelectBase(MustAWS("all"), small)
	if err != nil {
		t.Fatal(err)
	}
	if b.Catalog[0].Name != "g4dn.xlarge" {
		t.Errorf("mixed: base = %s, want g4dn.xlarge", b.Catalog[0].Name)
	}
	if _, err := SelectBase(nil, small); err == nil {
		t.Error("empty catalogue: want error")
	}
	if _, err := SelectBase(MustAWS("m5"), small); !errors.Is(err, ErrNoFit) {
		t.Errorf("GPU demand on m5: err = %v, want ErrNoFit", err)
	}
}

func TestPhillyVectors(t *testing.T) {
	g := MustAWS("g4dn")
	for _, tc := range []struct {
		gpus, replicas int
		want           string
	}{{1, 1, "g4dn.xlarge"}, {2, 1, "g4dn.12xlarge"}, {4, 1, "g4dn.12xlarge"}, {8, 2, "g4dn.metal"}} {
		j := &cluster.Job{ID: "j", Groups: []cluster.ReplicaGroup{{Name: "w", Replicas: tc.replicas, Min: tc.replicas, Max: tc.replicas,
			Demand: resource.New(6*float64(tc.gpus), 48*float64(tc.gpus), int64(tc.gpus))}}}
		vs := PhillyVectors(j)
		if len(vs) != tc.replicas {
			t.Fatalf("%d GPUs: %d vectors, want %d", tc.gpus, len(vs), tc.replicas)
		}
		i, err := g.TypeFor(vs[0])
		if err != nil {
			t.Fatal(err)
		}
		if g[i].Name != tc.want {
			t.Errorf("%d GPUs -> %s, want %s", tc.gpus, g[i].Name, tc.want)
		}
		if got := JobVectors(j); got[0][CPU] != 6*float64(tc.gpus) {
			t.Errorf("JobVectors cpu = %v, want the declared %v", got[0][CPU], 6*tc.gpus)
		}
	}
}
