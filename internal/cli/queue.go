package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-sched/drover/pkg/k8s"
)

// NewQueueCmd is `drover queue` (alias `drover status`): the scheduler's
// queue, read from the API server, in order, with each job's wait reason.
func NewQueueCmd() *cobra.Command {
	var kubeconfig, namespace, schedulerName, scope, output string
	cmd := &cobra.Command{
		Use:     "queue",
		Aliases: []string{"status"},
		Short:   "List the jobs waiting for drover, in queue order, with why each waits",
		Long: `Reads nodes, pods and TrainingJobs from the API server and lists the waiting
jobs (TrainingJobs and opted-in pods) in the order the scheduler hands them
to its policy: preempted jobs first, the most recently preempted first, then
arrival order. REASON is the policy's last wait reason (status.reason). The
policy may still start jobs out of this order (FitGpp serves TE jobs first,
backfilling starts smaller jobs behind a blocked one).

POS is the place in the whole queue; --namespace only filters the rows.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rc, err := ClientConfig(kubeconfig)
			if err != nil {
				return err
			}
			c, err := client.New(rc, client.Options{Scheme: k8s.Scheme()})
			if err != nil {
				return err
			}
			q, err := k8s.ReadQueue(cmd.Context(), c, k8s.QueueOptions{SchedulerName: schedulerName, Namespace: scope})
			if err != nil {
				return err
			}
			if namespace != "" {
				kept := q[:0]
				for _, e := range q {
					if e.Namespace == namespace {
						kept = append(kept, e)
					}
				}
				q = kept
			}
			return printQueue(cmd.OutOrStdout(), q, output, time.Now())
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG, else ~/.kube/config, else in-cluster)")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "show only this namespace's jobs (positions stay those of the whole queue)")
	cmd.Flags().StringVar(&scope, "scheduler-namespace", "", "the scheduler config's namespace, when it schedules one namespace only")
	cmd.Flags().StringVar(&schedulerName, "scheduler-name", "drover", "the scheduler config's schedulerName (opted-in pods carry it)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "table (default), wide or json")
	return cmd
}

func printQueue(w io.Writer, q []k8s.QueueEntry, output string, now time.Time) error {
	switch output {
	case "json":
		if q == nil {
			q = []k8s.QueueEntry{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(q)
	case "", "wide":
	default:
		return fmt.Errorf("--output %q: want table, wide or json", output)
	}
	if len(q) == 0 {
		_, err := fmt.Fprintln(w, "No jobs are waiting.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := []string{"POS", "NAMESPACE", "NAME", "CLASS", "PHASE", "REPLICAS", "WAITING", "PREEMPTIONS", "REASON"}
	if output == "wide" {
		head = []string{"POS", "KIND", "NAMESPACE", "NAME", "CLASS", "PRIORITY", "TENANT", "PHASE", "REPLICAS", "WAITING", "PREEMPTIONS", "REASON"}
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, e := range q {
		name := e.Name
		if e.Kind == "Pod" && output != "wide" {
			name = "pod/" + e.Name
		}
		reason := e.Reason
		if reason == "" {
			reason = "-"
		}
		cells := []string{strconv.Itoa(e.Position), e.Namespace, name, e.Class, e.Phase, strconv.Itoa(e.Replicas),
			duration.HumanDuration(now.Sub(e.Since)), strconv.Itoa(e.Preemptions), reason}
		if output == "wide" {
			cells = []string{strconv.Itoa(e.Position), e.Kind, e.Namespace, name, e.Class, strconv.Itoa(e.Priority), e.Tenant, e.Phase,
				strconv.Itoa(e.Replicas), duration.HumanDuration(now.Sub(e.Since)), strconv.Itoa(e.Preemptions), reason}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}
