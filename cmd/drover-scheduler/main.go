// Command drover-scheduler is the production scheduler binary: `drover
// scheduler` without the simulator, the experiments and the embedded
// Philly trace, so the image carries only what it runs (pkg/plugins and
// pkg/k8s). It takes the same flags as `drover scheduler`.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/drover-sched/drover/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd := cli.NewSchedulerCmd()
	cmd.Use = "drover-scheduler"
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "drover-scheduler:", err)
		os.Exit(1)
	}
}
