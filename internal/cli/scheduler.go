// Package cli holds the commands that the drover CLI and the production
// scheduler binary (cmd/drover-scheduler) share: the scheduler itself and
// the trainers' progress report.
package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/homedir"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-sched/drover/pkg/k8s"
	"github.com/drover-sched/drover/pkg/k8s/report"
	"github.com/drover-sched/drover/pkg/plugins"
)

// RestConfig loads a kubeconfig file, or $KUBECONFIG, or the in-cluster
// service account.
func RestConfig(path string) (*rest.Config, error) {
	if path == "" {
		path = os.Getenv("KUBECONFIG")
	}
	if path == "" {
		c, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no --kubeconfig, no KUBECONFIG and not in a cluster: %w", err)
		}
		return c, nil
	}
	c, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
	}
	return c, nil
}

// ClientConfig is RestConfig for the commands a person runs (drover
// queue): kubectl's loading rules (client-go clientcmd's defaults): the
// file path when given, else the files of $KUBECONFIG, else
// ~/.kube/config, with the current context; the in-cluster service
// account when none of them exists.
func ClientConfig(path string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	home := filepath.Join(homedir.HomeDir(), clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)
	if os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "" {
		rules.Precedence = []string{home} // $HOME as it is now (clientcmd reads it once, at start-up)
	}
	c, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		where := path
		if where == "" {
			where = "$KUBECONFIG, " + home + " or the in-cluster service account"
		}
		return nil, fmt.Errorf("loading the kubeconfig (%s): %w", where, err)
	}
	return c, nil
}

// SetLogger sends controller-runtime logs to stderr with timestamps.
func SetLogger(verbosity int) {
	ctrl.SetLogger(funcr.New(func(prefix, args string) {
		fmt.Fprintln(os.Stderr, time.Now().Format("15:04:05.000"), prefix, args)
	}, funcr.Options{Verbosity: verbosity}))
}

// NewSchedulerCmd is `drover scheduler`: the scheduler against an API server.
func NewSchedulerCmd() *cobra.Command {
	var kubeconfig, config, policy string
	var verbosity int
	cmd := &cobra.Command{
		Use:   "scheduler",
		Short: "Run the drover scheduler against a Kubernetes API server",
		Long: `Runs the drover scheduler: informers rebuild the cluster snapshot from the
API server, the configured policy decides every period, and its actions
become API calls (replica pods bound through the Binding subresource,
deletions with the job's grace period, status updates, Events, placeholder
Deployments). See docs/kubernetes.md.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			SetLogger(verbosity)
			cfg, err := k8s.LoadConfig(config)
			if err != nil {
				return err
			}
			if policy != "" {
				cfg.Policy, cfg.Profile = policy, nil
			}
			rc, err := RestConfig(kubeconfig)
			if err != nil {
				return err
			}
			reg, err := plugins.Policies()
			if err != nil {
				return err
			}
			name := cfg.Policy
			if cfg.Profile != nil {
				name = "profile " + cfg.Profile.Name
			}
			ctrl.Log.Info("drover scheduler starting", "policy", name, "period", cfg.Period.Duration.String(), "leaderElection", cfg.LeaderElection)
			// A lost lease ends a term, not the process: Campaign stops
			// scheduling and campaigns again (issue 28 item 2).
			return k8s.Campaign(cmd.Context(), rc, cfg, reg, nil)
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG, else in-cluster)")
	cmd.Flags().StringVar(&config, "config", "", "scheduler config file (YAML; pkg/k8s/config.go, or config: in charts/drover/values.yaml)")
	cmd.Flags().StringVar(&policy, "policy", "", "policy spec, overriding the config's (e.g. fitgpp or specon:interval=30)")
	cmd.Flags().IntVarP(&verbosity, "verbosity", "v", 0, "log verbosity")
	return cmd
}

// NewReportCmd is `drover report`, run by trainers inside replica pods.
func NewReportCmd() *cobra.Command {
	var kubeconfig, namespace, pod, checkpoint string
	var progress, metric, ckptProgress float64
	cmd := &cobra.Command{
		Use:   "report --progress F [--metric V] [--checkpoint PATH]",
		Short: "Report a trainer's progress, metric and checkpoint to drover (from inside a replica pod)",
		Long: `Writes the drover.dev/report annotation on the calling replica pod (found
from DROVER_POD_NAME and DROVER_POD_NAMESPACE, which drover sets), for shell
and Python trainers. The pod's service account needs patch on pods.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if namespace == "" || pod == "" {
				ns, p, err := report.Self()
				if err != nil {
					return err
				}
				namespace, pod = ns, p
			}
			rc, err := RestConfig(kubeconfig)
			if err != nil {
				return err
			}
			c, err := client.New(rc, client.Options{Scheme: k8s.Scheme()})
			if err != nil {
				return err
			}
			r := report.Report{Progress: progress, Checkpoint: checkpoint, CheckpointProgress: ckptProgress, Time: time.Now().UTC()}
			if cmd.Flags().Changed("metric") {
				r.Metric = &metric
			}
			if checkpoint != "" && !cmd.Flags().Changed("checkpoint-progress") {
				r.CheckpointProgress = progress
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			if err := report.Send(ctx, c, namespace, pod, r); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "reported progress=%s on %s/%s\n", strconv.FormatFloat(progress, 'g', 4, 64), namespace, pod)
			return nil
		},
	}
	cmd.Flags().Float64Var(&progress, "progress", 0, "fraction of training done, in [0, 1]")
	cmd.Flags().Float64Var(&metric, "metric", 0, "current value of the job's evaluation metric")
	cmd.Flags().StringVar(&checkpoint, "checkpoint", "", "last checkpoint written (restored from after preemption or migration)")
	cmd.Flags().Float64Var(&ckptProgress, "checkpoint-progress", 0, "progress held by that checkpoint (default: --progress)")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig (default in-cluster)")
	cmd.Flags().StringVar(&namespace, "namespace", "", "pod namespace (default $DROVER_POD_NAMESPACE)")
	cmd.Flags().StringVar(&pod, "pod", "", "pod name (default $DROVER_POD_NAME)")
	_ = cmd.MarkFlagRequired("progress")
	return cmd
}
