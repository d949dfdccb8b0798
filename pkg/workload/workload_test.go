package workload

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/resource"
	"github.com/drover-sched/drover/pkg/rng"
)

const goodCSV = `id,submit_s,duration_s,class,priority,grace_s,replicas,min_replicas,max_replicas,gpu,cpu,mem_gib,ps_replicas,ps_cpu,tenant,model,utility
a,0,100,TE,1,0,1,,,1,4,16,,,t1,vae,
b,10,3600,BE,0,60,2,1,4,2,8,32,1,2,t2,gru,sigmoid:10:0.01:5000
`

func TestParseCSV(t *testing.T) {
	jobs, err := ParseCSV(strings.NewReader(goodCSV), "jobs.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 {
		t.Fatalf("%d jobs", len(jobs))
	}
	a, b := jobs[0], jobs[1]
	if a.ID != "a" || a.Class != cluster.ClassTE || a.Priority != 1 || a.Work != 100 || a.Groups[0].Demand != resource.New(4, 16, 1) || a.Tenant != "t1" {
		t.Errorf("job a = %+v", a)
	}
	if b.Submit != 10 || b.GracePeriod != 60 || len(b.Groups) != 2 || b.Groups[0].Min != 1 || b.Groups[0].Max != 4 || b.Groups[0].Replicas != 2 {
		t.Errorf("job b = %+v", b)
	}
	if b.Groups[1].Name != "ps" || b.Groups[1].Demand != resource.New(2, 0, 0) || b.Utility == nil {
		t.Errorf("job b ps/utility = %+v %v", b.Groups[1], b.Utility)
	}
	// Round trip through WriteCSV.
	var buf bytes.Buffer
	if err := WriteCSV(&buf, jobs); err != nil {
		t.Fatal(err)
	}
	again, err := ParseCSV(&buf, "roundtrip.csv")
	if err != nil {
		t.Fatal(err)
	}
	if again[1].Groups[0] != b.Groups[0] || again[0].Class != a.Class {
		t.Errorf("round trip changed jobs: %+v", again[1].Groups[0])
	}
}

func TestParseCSVConstraints(t *testing.T) {
	in := "id,submit_s,duration_s,gpu,node_selector,tolerations,ps_replicas,ps_cpu,ps_tolerations\n" +
		"a,0,10,1,pool=team-a;gpu=a100,dedicated=team-a:NoSchedule;spot,1,2,*\n" +
		"b,0,10,1,,,,,\n"
	jobs, err := ParseCSV(strings.NewReader(in), "jobs.csv")
	if err != nil {
		t.Fatal(err)
	}
	a, b := jobs[0], jobs[1]
	if b.Groups[0].Constraint != nil {
		t.Errorf("job without constraints got %v", b.Groups[0].Constraint.Key())
	}
	team := &cluster.Node{Name: "n", Labels: map[string]string{"pool": "team-a", "gpu": "a100"},
		Taints: []cluster.Taint{{Key: "dedicated", Value: "team-a", Effect: cluster.TaintNoSchedule}, {Key: "spot", Effect: cluster.TaintNoExecute}}}
	other := &cluster.Node{Name: "o", Labels: map[string]string{"pool": "shared"}}
	if !a.Groups[0].Constraint.Admits(team) || a.Groups[0].Constraint.Admits(other) {
		t.Errorf("worker constraint: team %v other %v", a.Groups[0].Constraint.Admits(team), a.Groups[0].Constraint.Admits(other))
	}
	if !a.Groups[1].Constraint.Admits(team) || !a.Groups[1].Constraint.Admits(other) {
		t.Error("ps tolerating * must go anywhere")
	}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, jobs); err != nil {
		t.Fatal(err)
	}
	again, err := ParseCSV(&buf, "roundtrip.csv")
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	for g := range a.Groups {
		if again[0].Groups[g].Constraint.Key() != a.Groups[g].Constraint.Key() {
			t.Errorf("group %d round trip: %s != %s", g, again[0].Groups[g].Constraint.Key(), a.Groups[g].Constraint.Key())
		}
	}
}

func TestParseCSVErrors(t *testing.T) {
	hdr := "id,submit_s,duration_s,class,replicas,min_replicas,max_replicas,gpu,grace_s\n"
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "jobs.csv:1: empty file"},
		{"unknown column", "submit_s,duration_s,gpu,colour\n", "jobs.csv:1:4: field colour: unknown column"},
		{"missing column", "submit_s,gpu\n", "missing required column duration_s"},
		{"no demand", "submit_s,duration_s\n", "missing demand"},
		{"bad number", hdr + "a,x,10,TE,1,1,1,1,0\n", "jobs.csv:2:2: field submit_s"},
		{"negative grace", hdr + "a,0,10,BE,1,1,1,1,-5\n", "jobs.csv:2:9: field grace_s: -5 is below 0"},
		{"bad class", hdr + "a,0,10,XX,1,1,1,1,0\n", "jobs.csv:2:4: field class"},
		{"zero duration", hdr + "a,0,0,TE,1,1,1,1,0\n", "field duration_s"},
		{"min above max", hdr + "a,0,10,TE,2,3,2,1,0\n", "jobs.csv:2:6: field min_replicas: 3 is above max_replicas 2"},
		{"zero demand names a real column", "submit_s,duration_s,cpu\n0,1,0\n", "jobs.csv:2:3: field cpu: worker demand is zero"},
		{"huge gpu blamed on gpu", "submit_s,duration_s,cpu,gpu\n0,1,1,2e9\n", "jobs.csv:2:4: field gpu: 2e+09 is above the limit"},
		{"ps without demand", "submit_s,duration_s,gpu,ps_replicas\n0,1,1,2\n", "jobs.csv:2:4: field ps_replicas: is set but"},
		{"huge usage", "submit_s,duration_s,gpu,usage_cpu\n0,1,1,1e300\n", "jobs.csv:2:4: field usage_cpu"},
		{"huge replicas", "submit_s,duration_s,gpu,replicas\n0,1,1,1000000000000\n", "field replicas"},
		{"fractional gpu", hdr + "a,0,10,TE,1,1,1,0.5,0\n", "field gpu"},
		{"NaN", hdr + "a,NaN,10,TE,1,1,1,1,0\n", `"NaN" is not a decimal number`},
		{"short row", hdr + "a,0,10\n", "jobs.csv:2: 3 fields, header has 9"},
		{"duplicate id", hdr + "a,0,10,TE,1,1,1,1,0\na,0,10,TE,1,1,1,1,0\n", "jobs.csv:3:1: field id: duplicate id \"a\" (first on line 2)"},
		{"bad quote", hdr + "a,\"0,10,TE,1,1,1,1,0\n", "jobs.csv:"},
		{"bad utility", "submit_s,duration_s,gpu,utility\n0,1,1,linear:1\n", "field utility"},
		{"bad selector", "submit_s,duration_s,gpu,node_selector\n0,1,1,pool\n", "jobs.csv:2:4: field node_selector: \"pool\" is not key=value"},
		{"bad label value", "submit_s,duration_s,gpu,node_selector\n0,1,1,pool=a b\n", "jobs.csv:2:4: field node_selector: label value"},
		{"bad effect", "submit_s,duration_s,gpu,tolerations\n0,1,1,gpu:NoWay\n", "jobs.csv:2:4: field tolerations: \"gpu:NoWay\": effect"},
		{"empty toleration key", "submit_s,duration_s,gpu,tolerations\n0,1,1,=x:NoSchedule\n", "jobs.csv:2:4: field tolerations"},
		{"ps selector without ps", "submit_s,duration_s,gpu,ps_node_selector\n0,1,1,a=b\n", "jobs.csv:2:4: field ps_node_selector: is set but ps_replicas is not"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			jobs, err := ParseCSV(strings.NewReader(tc.in), "jobs.csv")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
			if jobs != nil {
				t.Fatal("a failed parse returned jobs")
			}
		})
	}
}

func TestPhilly(t *testing.T) {
	in := "timestamp,duration,num_gpus,gpu_time,cluster\n" +
		"2017-10-09 07:01:55,66.0,1,66.0,vc1\n" +
		"2017-10-09 06:01:55,4000.0,12,48000.0,vc2\n" +
		"2017-10-09 06:31:55,100.0,16,1600,vc2\n"
	jobs, err := ParsePhilly(strings.NewReader(in), "p.csv", DefaultPhillyOptions())
	if err != nil {
		t.Fatal(err)
	}
	// Sorted by time and rebased to 0.
	if jobs[0].Submit != 0 || jobs[1].Submit != 1800 || jobs[2].Submit != 3600 {
		t.Fatalf("submits %v %v %v", jobs[0].Submit, jobs[1].Submit, jobs[2].Submit)
	}
	// 12 GPUs: two replicas of 6; 16 GPUs: two of 8; 1 GPU: one of 1.
	g := func(j *cluster.Job) (int, int64) { return j.Groups[0].Replicas, j.Groups[0].Demand[resource.GPU] }
	if r, d := g(jobs[0]); r != 2 || d != 6 {
		t.Errorf("12-GPU job: %d x %d", r, d)
	}
	if r, d := g(jobs[1]); r != 2 || d != 8 {
		t.Errorf("16-GPU job: %d x %d", r, d)
	}
	if jobs[2].Class != cluster.ClassTE || jobs[0].Class != cluster.ClassBE || jobs[0].GracePeriod != 60 || jobs[0].Tenant != "vc2" {
		t.Errorf("classes/grace: %+v", jobs[0])
	}
	if jobs[2].Groups[0].Demand != resource.New(6, 48, 1) {
		t.Errorf("1-GPU demand %v", jobs[2].Groups[0].Demand)
	}
	for _, bad := range []struct{ in, want string }{
		{"", "empty file"},
		{"timestamp,duration\n", "missing column num_gpus"},
		{"timestamp,duration,num_gpus,gpu_time,cluster\n2017-13-01 00:00:00,1,1,1,a\n", "p.csv:2:1: field timestamp"},
		{"timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-01 00:00:00,-1,1,1,a\n", "p.csv:2:2: field duration"},
		{"timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-01 00:00:00,1,0,1,a\n", "p.csv:2:3: field num_gpus"},
		{"timestamp,duration,num_gpus,gpu_time,cluster\n", "no jobs"},
	} {
		if _, err := ParsePhilly(strings.NewReader(bad.in), "p.csv", DefaultPhillyOptions()); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ParsePhilly(%q) error %v, want %q", bad.in, err, bad.want)
		}
	}
}

func TestEmbeddedPhilly(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 82k jobs")
	}
	jobs, err := LoadPhilly("", DefaultPhillyOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 82247 {
		t.Fatalf("%d jobs, want 82,247", len(jobs))
	}
	var gpus int64
	te := 0
	for _, j := range jobs {
		gpus += j.RequestedDemand()[resource.GPU]
		if j.Class == cluster.ClassTE {
			te++
		}
	}
	if gpus != 107235 {
		t.Errorf("%d GPUs requested, the trace README says 107,235", gpus)
	}
	if frac := float64(te) / float64(len(jobs)); frac < 0.32 || frac > 0.34 {
		t.Errorf("TE share %.3f, documented as 32.7%%", frac)
	}
}

func TestMixedIsSeeded(t *testing.T) {
	o := MixedOptions{Jobs: 50, Load: 1, ClusterGPUs: 16, TEShare: 0.3, CoresPerGPU: 1, MemGiBPerGPU: 1}
	a, b, c := Mixed(1, o), Mixed(1, o), Mixed(2, o)
	var wa, wb, wc bytes.Buffer
	WriteCSV(&wa, a)
	WriteCSV(&wb, b)
	WriteCSV(&wc, c)
	if wa.String() != wb.String() {
		t.Error("same seed gave different workloads")
	}
	if wa.String() == wc.String() {
		t.Error("different seeds gave the same workload")
	}
	for _, j := range a {
		if err := j.Validate(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTruncNormalBounds(t *testing.T) {
	r := rng.New(1, "t")
	for i := 0; i < 10000; i++ {
		if x := rng.TruncNormal(r, 10, 50, 5, 12); x < 5 || x > 12 {
			t.Fatalf("draw %v outside [5, 12]", x)
		}
	}
}

// FuzzParseCSV: any input either parses into valid jobs or fails with a
// FieldError naming the file; it never panics.
func FuzzParseCSV(f *testing.F) {
	f.Add(goodCSV)
	f.Add("submit_s,duration_s,gpu\n0,1,1\n")
	f.Add("submit_s,duration_s,gpu,replicas,min_replicas\n0,1,1,2,3\n")
	f.Add("\ufeffsubmit_s,duration_s,cpu\n1e308,1e308,1e308\n")
	f.Add("submit_s,duration_s,gpu,node_selector,tolerations\n0,1,1,pool=a;x.io/y=z,k=v:NoSchedule;k2;*\n")
	f.Add("submit_s,duration_s,gpu,ps_replicas,ps_cpu,ps_node_selector,ps_tolerations\n0,1,1,1,1,a=,b:NoExecute\n")
	f.Add("submit_s,duration_s,gpu,replicas,max_replicas,ps_replicas,ps_cpu,epochs,chunks,mini_batches,gradient_mb,worker_bw_mbs,ps_bw_mbs,sensitivity\n0,100,1,2,4,1,1,2,4,3,1,10,20,critical\n")
	f.Add("submit_s,duration_s,gpu,ps_replicas,ps_cpu,mini_batch_s,epochs\n0,100,1,1,1,50,2\n")
	f.Fuzz(func(t *testing.T, in string) {
		jobs, err := ParseCSV(strings.NewReader(in), "fuzz.csv")
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) && !strings.HasPrefix(err.Error(), "fuzz.csv") {
				t.Fatalf("error does not locate the problem: %v", err)
			}
			return
		}
		for _, j := range jobs {
			if err := j.Validate(); err != nil {
				t.Fatalf("parsed an invalid job: %v", err)
			}
			if j.Submit > MaxSeconds || j.Work > MaxSeconds || j.GracePeriod > MaxSeconds {
				t.Fatalf("job %s: times beyond MaxSeconds: %v %v %v", j.ID, j.Submit, j.Work, j.GracePeriod)
			}
			if (j.PS != nil) != (len(j.Groups) == 2) {
				t.Fatalf("job %s: %d groups, PS %+v", j.ID, len(j.Groups), j.PS)
			}
			if p := j.PS; p != nil {
				if p.Epochs <= 0 || p.Chunks <= 0 || p.MiniBatches <= 0 || !(p.MiniBatchTime >= 0) || !(p.WorkerBW > 0) || !(p.PSBW > 0) || p.GradientMB < 0 {
					t.Fatalf("job %s: PS %+v", j.ID, p)
				}
				need := j.Work * float64(j.Groups[0].Replicas)
				got := float64(p.Epochs) * float64(p.Chunks) * float64(p.MiniBatches) * (p.MiniBatchTime + 2*p.GradientMB/p.WorkerBW)
				if math.Abs(got-need) > 0.0101*need {
					t.Fatalf("job %s: model needs %v worker-seconds, row %v", j.ID, got, need)
				}
			}
		}
	})
}

// FuzzParsePhilly: never panics, errors name the file.
func FuzzParsePhilly(f *testing.F) {
	f.Add("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,1,66.0,11cb48\n")
	f.Add("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,128,66.0,x\n")
	f.Fuzz(func(t *testing.T, in string) {
		jobs, err := ParsePhilly(strings.NewReader(in), "fuzz.csv", DefaultPhillyOptions())
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.csv") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, j := range jobs {
			if err := j.Validate(); err != nil {
				t.Fatalf("parsed an invalid job: %v", err)
			}
		}
	})
}
