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
func ParseSpec(spec string) ([]Node, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, fmt.Errorf("cluster spec is empty")
	}
	var nodes []Node
	seq := map[string]int{} // per instance type, so two pools of one type get distinct names
	for pi, pool := range strings.Split(spec, "+") {
		cnt, kvs, ok := strings.Cut(strings.TrimSpace(pool), ":")
		if !ok {
			return nil, fmt.Errorf("cluster spec pool %d %q: want COUNT:key=value,...", pi+1, pool)
		}
		n, err := strconv.Atoi(cnt)
		if err != nil || n <= 0 || n > 1_000_000 {
			return nil, fmt.Errorf("cluster spec pool %d: count %q is not a positive integer", pi+1, cnt)
		}
		tmpl := Node{InstanceType: fmt.Sprintf("pool%d", pi+1)}
		for _, kv := range strings.Split(kvs, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok {
				return nil, fmt.Errorf("cluster spec pool %d: %q is not key=value", pi+1, kv)
			}
			num := func() (float64, error) {
				x, err := strconv.ParseFloat(v, 64)
				if err != nil || x < 0 || math.IsNaN(x) || math.IsInf(x, 0) || x > 1e12 {
					return 0, fmt.Errorf("cluster spec pool %d: %s=%q is not a non-negative number", pi+1, k, v)
				}
				return x, nil
			}
			var x float64
			switch k {
			case "role":
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
			default:
				return nil, fmt.Errorf("cluster spec pool %d: unknown key %q (want cpu, mem_gib, gpu, storage_gib, bandwidth_mbps, price, role, type, group, label, taint)", pi+1, k)
			}
		}
		if tmpl.Capacity.IsZero() {
			return nil, fmt.Errorf("cluster spec pool %d: no capacity given", pi+1)
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
