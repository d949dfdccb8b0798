package elastic

import (
	"errors"
	"fmt"

	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/resource"
)

// ValidateJobs checks elastic parameter-server jobs against a cluster
// before a run, so that bad input is an error naming the job and field
// rather than a job the simulator rejects at arrival. On top of
// cluster.Job.Validate (which rejects min_replicas above max_replicas and a
// zero max_replicas) it requires a worker group with at least one replica
// at its minimum (a job shrunk to zero workers would hold its parameter
// servers forever) and rejects a replica whose demand is larger than every
// node, since no scheduler could ever place it.
func ValidateJobs(jobs []*cluster.Job, nodes []cluster.Node) error {
	var largest resource.Vector
	for _, n := range nodes {
		largest = largest.Max(n.Capacity)
	}
	var errs []error
	for _, j := range jobs {
		if err := j.Validate(); err != nil {
			errs = append(errs, err)
			continue
		}
		if g := &j.Groups[0]; g.Min < 1 {
			errs = append(errs, fmt.Errorf("job %s: groups[%s].min_replicas: %d; an elastic job needs at least one worker", j.ID, g.Name, g.Min))
		}
		for i := range j.Groups {
			g := &j.Groups[i]
			fits := false
			for _, n := range nodes {
				if g.Demand.Fits(n.Capacity) {
					fits = true
					break
				}
			}
			if !fits {
				errs = append(errs, fmt.Errorf("job %s: groups[%s].demand: %v per replica is larger than every node (largest %v, short of %s)",
					j.ID, g.Name, g.Demand, largest, g.Demand.Short(largest)))
			}
		}
	}
	return errors.Join(errs...)
}
