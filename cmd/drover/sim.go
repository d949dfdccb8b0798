package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"sigs.k8s.io/yaml"

	"github.com/drover-sched/drover/internal/exp/baselines"
	"github.com/drover-sched/drover/pkg/cluster"
	"github.com/drover-sched/drover/pkg/experiment"
	"github.com/drover-sched/drover/pkg/plugins"
	"github.com/drover-sched/drover/pkg/policy"
	"github.com/drover-sched/drover/pkg/profile"
	"github.com/drover-sched/drover/pkg/registry"
	"github.com/drover-sched/drover/pkg/sim"
	"github.com/drover-sched/drover/pkg/textio"
	"github.com/drover-sched/drover/pkg/workload"
)

type simFlags struct {
	experiment string
	list       bool
	trace      string
	format     string
	traceFmt   string
	policies   string
	profiles   []string
	cluster    string
	seed       uint64
	seeds      int
	out        string
	tick       float64
	philly     string
	quick      bool
	check      bool
	workers    int
}

func newSimCmd() *cobra.Command {
	var f simFlags
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run a simulator experiment or replay a trace",
		Long: `Run a named experiment (default: overview) or replay a trace under chosen policies.

Examples:
  drover sim                                   # the default experiment
  drover sim --list                            # experiments and policies
  drover sim --experiment philly --format json
  drover sim --trace jobs.csv --policy fifo,drf --cluster '8:gpu=8,cpu=48,mem_gib=384'
  drover sim --experiment overview --out results/   # per-job CSVs and SVG charts

Policy parameters follow a colon, separated by semicolons:
  --policy 'fifo:placement=spread,k8s-default'

The trace format (generic or philly) is told by the header row unless
--trace-format names it. Every number given here, in the cluster spec, in a
trace or as a policy parameter has bounds (docs/simulator.md, "Bounds of
the command line"); a value outside them is an error naming the flag or
the file, line and field. The table lists rejected and unfinished jobs by
reason below the rows.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSim(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.experiment, "experiment", "e", "", "named experiment to run (default overview)")
	fl.BoolVar(&f.list, "list", false, "list experiments and policies")
	fl.StringVar(&f.trace, "trace", "", "replay this trace file instead of an experiment")
	fl.StringVar(&f.traceFmt, "trace-format", "", "trace format: generic or philly (default: by the header row)")
	fl.StringVarP(&f.policies, "policy", "p", "", "comma-separated policies for --trace (default: the overview set)")
	fl.StringSliceVar(&f.profiles, "profile", nil, "profile file(s) (YAML: plugins per extension point, see docs/ARCHITECTURE.md) to run with --trace, by their name")
	fl.StringVar(&f.cluster, "cluster", "", "cluster for --trace, e.g. '64:gpu=8,cpu=48,mem_gib=384' (keys, roles and bounds: docs/simulator.md)")
	fl.Uint64Var(&f.seed, "seed", 1, "random seed (first seed of multi-seed experiments)")
	fl.IntVar(&f.seeds, "seeds", 0, fmt.Sprintf("number of seeds, 1 to %d (default: the experiment's)", maxSeeds))
	fl.StringVarP(&f.format, "format", "o", "table", "output format: table or json")
	fl.StringVar(&f.out, "out", "", "directory for per-job CSVs, charts (SVG) and report.json")
	fl.Float64Var(&f.tick, "tick", 60, fmt.Sprintf("scheduling interval in seconds for --trace, %g to %g (0: after every event)", minTick, maxTick))
	fl.StringVar(&f.philly, "philly", "", "Philly trace file (default: the embedded copy)")
	fl.BoolVar(&f.quick, "quick", false, "reduced scale (smoke runs)")
	fl.BoolVar(&f.check, "check", false, "verify simulator invariants after every event (slow) for --trace")
	fl.IntVar(&f.workers, "workers", 0, fmt.Sprintf("simulations run at once, up to %d (default: GOMAXPROCS); the output does not depend on it", maxWorkers))
	return cmd
}

// Bounds of the numeric flags of drover sim. A tick below minTick is
// below the clock's resolution at long trace times (--tick 1e-15 never
// advanced); the others keep runs and memory finite.
const (
	minTick    = 1e-3
	maxTick    = 24 * 3600.0
	maxSeeds   = 1000
	maxWorkers = 1024
)

// checkSimFlags validates the flags that need no file, naming the flag in
// every error, before anything runs.
func checkSimFlags(cmd *cobra.Command, f simFlags) error {
	if f.format != "table" && f.format != "json" {
		return fmt.Errorf("--format %q: want table or json", f.format)
	}
	if f.tick != 0 && !(f.tick >= minTick && f.tick <= maxTick) {
		return fmt.Errorf("--tick %v: want 0 (after every event) or seconds in [%g, %g]", f.tick, minTick, maxTick)
	}
	if cmd.Flags().Changed("seeds") && (f.seeds < 1 || f.seeds > maxSeeds) {
		return fmt.Errorf("--seeds %d: want 1 to %d (omit it for the experiment's own count)", f.seeds, maxSeeds)
	}
	if f.workers < 0 || f.workers > maxWorkers {
		return fmt.Errorf("--workers %d: want 0 (GOMAXPROCS) to %d", f.workers, maxWorkers)
	}
	if f.traceFmt != "" && f.traceFmt != string(workload.FormatGeneric) && f.traceFmt != string(workload.FormatPhilly) {
		return fmt.Errorf("--trace-format %q: want generic or philly", f.traceFmt)
	}
	if cmd.Flags().Changed("policy") {
		if _, err := splitPolicies(f.policies); err != nil {
			return err
		}
	}
	return nil
}

func runSim(cmd *cobra.Command, f simFlags) error {
	if err := checkSimFlags(cmd, f); err != nil {
		return err
	}
	pols, err := plugins.Policies()
	if err != nil {
		return err
	}
	exps, err := registry.Experiments()
	if err != nil {
		return err
	}
	stdout := cmd.OutOrStdout()
	if f.list {
		return list(stdout, exps, pols)
	}
	env := &experiment.Env{Seed: f.seed, Seeds: f.seeds, Policies: pols, PhillyPath: f.philly, Quick: f.quick, Workers: f.workers}
	if term.IsTerminal(int(os.Stderr.Fd())) {
		env.Progress = newProgressBar(os.Stderr).update
	}
	var rep *experiment.Report
	if f.trace != "" {
		if f.experiment != "" {
			return fmt.Errorf("--trace and --experiment are exclusive")
		}
		rep, err = runTrace(cmd, f, env)
	} else {
		if cmd.Flags().Changed("policy") || f.cluster != "" || len(f.profiles) > 0 {
			return fmt.Errorf("--policy, --profile and --cluster go with --trace; experiments fix their own")
		}
		name := f.experiment
		if name == "" {
			name = "overview"
		}
		var e experiment.Experiment
		if e, err = exps.Get(name); err != nil {
			return err
		}
		rep, err = e.Run(cmd.Context(), env)
	}
	if env.Progress != nil {
		fmt.Fprint(os.Stderr, "\r\033[K")
	}
	if err != nil {
		return err
	}
	if f.out != "" {
		files, err := rep.WriteOut(f.out)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "wrote %d files to %s\n", len(files), f.out)
	}
	if f.format == "json" {
		return rep.WriteJSON(stdout)
	}
	return rep.WriteTable(stdout)
}

func runTrace(cmd *cobra.Command, f simFlags, env *experiment.Env) (*experiment.Report, error) {
	if f.cluster == "" {
		return nil, fmt.Errorf("--trace needs --cluster, e.g. --cluster '64:gpu=8,cpu=48,mem_gib=384'")
	}
	nodes, err := cluster.ParseSpec(f.cluster)
	if err != nil {
		return nil, fmt.Errorf("--cluster: %w", err)
	}
	format := workload.Format(f.traceFmt)
	if format == "" {
		if format, err = workload.SniffFormat(f.trace); err != nil {
			return nil, fmt.Errorf("--trace: %w (or set --trace-format)", err)
		}
	}
	var jobs []*cluster.Job
	switch format {
	case workload.FormatGeneric:
		jobs, err = workload.LoadCSVFile(f.trace)
	case workload.FormatPhilly:
		jobs, err = workload.LoadPhilly(f.trace, workload.DefaultPhillyOptions())
	}
	if err != nil {
		return nil, fmt.Errorf("--trace (format %s): %w", format, err)
	}
	specs := baselines.OverviewPolicies
	if len(f.profiles) > 0 {
		specs = nil
	}
	if cmd.Flags().Changed("policy") {
		if specs, err = splitPolicies(f.policies); err != nil {
			return nil, err
		}
	}
	names, err := addProfiles(env.Policies, f.profiles)
	if err != nil {
		return nil, err
	}
	specs = append(specs, names...)
	for _, s := range specs {
		if _, err := env.Policies.New(s); err != nil {
			return nil, fmt.Errorf("--policy: %w", err)
		}
	}
	setup := experiment.Setup{
		Nodes:  func(uint64) []cluster.Node { return nodes },
		Jobs:   func(uint64) ([]*cluster.Job, error) { return jobs, nil },
		Config: sim.Config{Tick: f.tick, Check: f.check},
	}
	rows, runs, err := experiment.RunPolicies(cmd.Context(), env, "trace", setup, specs, env.SeedCount(1))
	if err != nil {
		return nil, err
	}
	return &experiment.Report{Experiment: "trace:" + f.trace, Seed: f.seed, Seeds: env.SeedCount(1), Results: rows, Jobs: experiment.JobTables(runs),
		Charts: []experiment.ChartFile{experiment.JCTCDF("JCT CDF", runs), experiment.UtilChart("GPU allocation", runs)}}, nil
}

// addProfiles reads profile files and registers each as a policy under its
// name, so that it runs beside the presets.
func addProfiles(pols *policy.Registry, files []string) ([]string, error) {
	reg, err := plugins.Registry()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, file := range files {
		data, err := textio.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--profile: %w", err)
		}
		spec, err := parseProfileFile(data, file)
		if err != nil {
			return nil, fmt.Errorf("--profile: %w", err)
		}
		if _, err := reg.Profile(spec); err != nil {
			return nil, fmt.Errorf("--profile %s: %w", file, err)
		}
		e := policy.Entry{Name: spec.Name, Description: "profile from " + file,
			New: func(p policy.Params) (policy.Policy, error) {
				if err := p.Check(spec.Name); err != nil {
					return nil, err
				}
				return reg.Build(spec)
			}}
		if err := pols.Add(e); err != nil {
			return nil, fmt.Errorf("--profile %s: name %q is taken by a preset or another profile", file, spec.Name)
		}
		names = append(names, spec.Name)
	}
	return names, nil
}

// parseProfileFile reads a --profile file: a profile.Spec, or a
// document whose only top-level key is profile: holding one (the scheduler
// config's block, as docs/ARCHITECTURE.md shows it), so that the same
// block runs in drover sim and in the scheduler.
func parseProfileFile(data []byte, file string) (profile.Spec, error) {
	var top map[string]json.RawMessage
	if js, err := yaml.YAMLToJSON(data); err == nil && json.Unmarshal(js, &top) == nil && len(top) == 1 && top["profile"] != nil {
		return profile.Parse(top["profile"], file+" (profile:)")
	}
	return profile.Parse(data, file)
}

// splitPolicies splits --policy at commas. An empty entry (--policy ',')
// or a policy given twice is an error: either would run something other
// than what was asked for without saying so.
func splitPolicies(s string) ([]string, error) {
	var out []string
	seen := map[string]int{}
	for i, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, fmt.Errorf("--policy %q: entry %d is empty", s, i+1)
		}
		if prev, dup := seen[p]; dup {
			return nil, fmt.Errorf("--policy %q: %s given twice (entries %d and %d)", s, p, prev, i+1)
		}
		seen[p] = i + 1
		out = append(out, p)
	}
	return out, nil
}

func list(w io.Writer, exps *experiment.Registry, pols *policy.Registry) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "EXPERIMENT\tDESCRIPTION")
	for _, e := range exps.All() {
		fmt.Fprintf(tw, "%s\t%s\n", e.Name, e.Description)
	}
	fmt.Fprintln(tw, "\t")
	fmt.Fprintln(tw, "POLICY\tDESCRIPTION")
	for _, e := range pols.Entries() {
		fmt.Fprintf(tw, "%s\t%s\n", e.Name, e.Description)
	}
	return tw.Flush()
}

type progressBar struct {
	w     io.Writer
	last  time.Time
	start time.Time
}

func newProgressBar(w io.Writer) *progressBar {
	return &progressBar{w: w, start: time.Now()}
}

func (p *progressBar) update(label string, done, total int) {
	if time.Since(p.last) < 100*time.Millisecond && done < total {
		return
	}
	p.last = time.Now()
	const width = 30
	frac := 0.0
	if total > 0 {
		frac = float64(done) / float64(total)
	}
	n := int(frac * width)
	fmt.Fprintf(p.w, "\r\033[K%s [%s%s] %3.0f%% %s", label, strings.Repeat("=", n), strings.Repeat(" ", width-n), frac*100,
		time.Since(p.start).Truncate(time.Second))
}
