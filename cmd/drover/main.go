// Command drover is a deep-learning-aware job scheduler for Kubernetes and
// the simulator that evaluates its policies.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/drover-sched/drover/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRoot().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "drover:", err)
		os.Exit(1)
	}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "drover",
		Short:         "A deep-learning-aware job scheduler for Kubernetes, and its simulator",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newSimCmd())
	root.AddCommand(cli.NewSchedulerCmd(), cli.NewReportCmd(), cli.NewQueueCmd(), newDevClusterCmd())
	root.AddCommand(newForecastCmd())
	return root
}
