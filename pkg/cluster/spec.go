package cluster

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/drover-sched/drover/pkg/resource"
)

// ParseSpec parses a cluster description such as
//
//	64:gpu=8,cpu=48,mem_gib=384,price=24.48
//	3:cpu=8,mem_gib=30+2:cpu=16,mem_gib=64,gpu=1,role=ps,type=p2
//
// Pools are separated by '+'; each is COUNT:key=value,... with keys cpu
// (cores), mem_gib, gpu, storage_gib, bandwidth_mbps, price (per hour),
// role, type (instance type name), group (placement group), label
// (label=key=value, repeated for several) and taint (taint=key=value:Effect
// or taint=key:Effect, Effect one of NoSchedule, NoExecute,
// PreferNoSchedule; repeated for several):
//
//	4:gpu=8,cpu=48,mem_gib=384,label=pool=team-a,taint=dedicated=team-a:NoSchedule+8:gpu=8,cpu=48,mem_gib=384
//
// Bounds (issue 17 item 10): a pool has 1 to MaxSpecNodes nodes, and so do
// all pools together; each number lies within its key's specBounds and a
// non-zero amount must not round to zero in drover's units (cpu 0.001
// core, memory and storage one byte); the capacity of the whole cluster
// must fit int64 with room for sums. role is worker or ps (the group names
// trace jobs have; another role would make the pool unusable), and a key
// other than label or taint may appear once per pool.
func ParseSpec(spec string) ([]Node, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, fmt.Errorf("cluster spec is empty")
	}
	var nodes []Node
	var total [resource.NumKinds]float64 // capacity of the cluster, checked against maxSpecTotal
	seq := map[string]int{}              // per instance type, so two pools of one type get distinct names
	for pi, pool := range strings.Split(spec, "+") {
		cnt, kvs, ok := strings.Cut(strings.TrimSpace(pool), ":")
		if !ok {
			return nil, fmt.Errorf("cluster spec pool %d %q: want COUNT:key=value,...", pi+1, pool)
		}
		n, err := strconv.Atoi(strings.TrimSpace(cnt))
		switch {
		case err != nil || n <= 0:
			return nil, fmt.Errorf("cluster spec pool %d: count %q is not a positive integer", pi+1, cnt)
		case n > MaxSpecNodes || len(nodes)+n > MaxSpecNodes:
			return nil, fmt.Errorf("cluster spec pool %d: count %d brings the cluster to %d nodes, above the limit %d", pi+1, n, len(nodes)+n, MaxSpecNodes)
		}
		tmpl := Node{InstanceType: fmt.Sprintf("pool%d", pi+1)}
		seen := map[string]bool{}
		for _, kv := range strings.Split(kvs, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok {
				return nil, fmt.Errorf("cluster spec pool %d: %q is not key=value", pi+1, kv)
			}
			if k != "label" && k != "taint" {
				if seen[k] {
					return nil, fmt.Errorf("cluster spec pool %d: key %s given twice", pi+1, k)
				}
				seen[k] = true
			}
			num := func() (float64, error) {
				b, ok := specBounds[k]
				if !ok {
					return 0, fmt.Errorf("cluster spec pool %d: unknown key %q (want cpu, mem_gib, gpu, storage_gib, bandwidth_mbps, price, role, type, group, label, taint)", pi+1, k)
				}
				x, err := strconv.ParseFloat(v, 64)
				if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
					return 0, fmt.Errorf("cluster spec pool %d: %s=%q is not a number", pi+1, k, v)
				}
				if x < 0 || x > b.max {
					return 0, fmt.Errorf("cluster spec pool %d: %s=%q is outside [0, %v]", pi+1, k, v, b.max)
				}
				if x > 0 && x*b.unit < 0.5 {
					return 0, fmt.Errorf("cluster spec pool %d: %s=%q rounds to 0 (the smallest amount is %v)", pi+1, k, v, 1/b.unit)
				}
				return x, nil
			}
			var x float64
			switch k {
			case "role":
				if v != "worker" && v != "ps" {
					return nil, fmt.Errorf("cluster spec pool %d: role=%q: want worker or ps (the replica groups of trace jobs; omit role for nodes that run anything)", pi+1, v)
				}
				tmpl.Role = v
				continue
			case "type":
				tmpl.InstanceType = v
				continue
			case "group":
				tmpl.PlacementGroup = v
				continue
			case "label":
				lk, lv, ok := strings.Cut(v, "=")
				if !ok || lk == "" {
					return nil, fmt.Errorf("cluster spec pool %d: label=%q: want label=key=value", pi+1, v)
				}
				if _, dup := tmpl.Labels[lk]; dup {
					return nil, fmt.Errorf("cluster spec pool %d: label %q given twice", pi+1, lk)
				}
				if tmpl.Labels == nil {
					tmpl.Labels = map[string]string{}
				}
				tmpl.Labels[lk] = lv
				continue
			case "taint":
				t, err := parseTaint(v)
				if err != nil {
					return nil, fmt.Errorf("cluster spec pool %d: taint=%q: %v", pi+1, v, err)
				}
				tmpl.Taints = append(tmpl.Taints, t)
				continue
			}
			if x, err = num(); err != nil {
				return nil, err
			}
			switch k {
			case "cpu":
				tmpl.Capacity[resource.CPU] = int64(x*1000 + 0.5)
			case "mem_gib":
				tmpl.Capacity[resource.Memory] = int64(x*float64(resource.GiB) + 0.5)
			case "gpu":
				if x != math.Trunc(x) {
					return nil, fmt.Errorf("cluster spec pool %d: gpu=%q is not a whole number", pi+1, v)
				}
				tmpl.Capacity[resource.GPU] = int64(x)
			case "storage_gib":
				tmpl.Capacity[resource.Storage] = int64(x*float64(resource.GiB) + 0.5)
			case "bandwidth_mbps":
				tmpl.Capacity[resource.Bandwidth] = int64(x)
			case "price":
				tmpl.PricePerHour = x
			}
		}
		if tmpl.Capacity.IsZero() {
			return nil, fmt.Errorf("cluster spec pool %d: no capacity given", pi+1)
		}
		for r, c := range tmpl.Capacity {
			if total[r] += float64(c) * float64(n); total[r] > maxSpecTotal {
				return nil, fmt.Errorf("cluster spec pool %d: the cluster's total %s exceeds %v units (int64 headroom for sums)", pi+1, resource.Kind(r), float64(maxSpecTotal))
			}
		}
		for i := 0; i < n; i++ {
			nd := tmpl // nodes of a pool share its (read-only) labels and taints
			nd.Name = fmt.Sprintf("%s-%d", tmpl.InstanceType, seq[tmpl.InstanceType])
			seq[tmpl.InstanceType]++
			nodes = append(nodes, nd)
		}
	}
	return nodes, nil
}

// MaxSpecNodes bounds the nodes of a cluster spec.
const MaxSpecNodes = 1_000_000

// maxSpecTotal bounds the cluster's capacity of each resource in drover's
// units, leaving a factor of 1000 below int64's maximum for the sums that
// policies and executors form over nodes and jobs.
const maxSpecTotal = math.MaxInt64 / 1000

// specBound is the largest value of a numeric key and the number of
// drover's units in one of its units (a non-zero value below half a unit
// rounds to zero and is refused).
type specBound struct{ max, unit float64 }

// specBounds are the numeric keys of a pool: a million cores, GiB of
// memory or GPUs, a billion GiB of storage or Mbit/s, or dollars an hour.
var specBounds = map[string]specBound{
	"cpu":            {1e6, 1000},
	"mem_gib":        {1e6, float64(resource.GiB)},
	"gpu":            {1e6, 1},
	"storage_gib":    {1e9, float64(resource.GiB)},
	"bandwidth_mbps": {1e9, 1},
	"price":          {1e9, math.Inf(1)},
}

// parseTaint parses key=value:Effect or key:Effect.
func parseTaint(s string) (Taint, error) {
	kv, eff, ok := strings.Cut(s, ":")
	if !ok {
		return Taint{}, fmt.Errorf("want key=value:Effect or key:Effect")
	}
	k, v, _ := strings.Cut(kv, "=")
	if k == "" {
		return Taint{}, fmt.Errorf("empty key")
	}
	switch eff {
	case TaintNoSchedule, TaintNoExecute, TaintPreferNoSchedule:
	default:
		return Taint{}, fmt.Errorf("effect %q is not NoSchedule, NoExecute or PreferNoSchedule", eff)
	}
	return Taint{Key: k, Value: v, Effect: eff}, nil
}
