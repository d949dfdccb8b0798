package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/drover-sched/drover/config/crd"
	"github.com/drover-sched/drover/internal/cli"
	"github.com/drover-sched/drover/internal/standin"
	"github.com/drover-sched/drover/pkg/k8s"
	"github.com/drover-sched/drover/pkg/plugins"
	"github.com/drover-sched/drover/pkg/textio"
)

// devPolicy is the dev cluster's default policy: the drover preset, with
// SpeCon's reading scaled to the stand-in trainers, which run at 5x with a
// loss that falls from 2 to 0.2: a categorisation round every 5 s of wall
// time (25 training seconds; the preset's 30 s would take minutes to call
// a job converged), a threshold of 0.05 per round, and converged (CC) jobs
// as the candidates of SpeCon's rebalancing. pkg/k8s/e2e's
// TestDroverProfileStory runs examples/ with it.
const devPolicy = "drover:alpha=0.05;interval=5;candidates=converged"

func newDevClusterCmd() *cobra.Command {
	var assets, crdDir, kubeconfigOut, config, policy, cpu, gpu, mem, storage, metricsAddr string
	var nodes int
	var forHelm bool
	var scale float64
	var verbosity int
	cmd := &cobra.Command{
		Use:   "dev-cluster",
		Short: "Start etcd, kube-apiserver, stand-in nodes and the scheduler on loopback, for trying drover locally",
		Long: `Starts etcd and kube-apiserver (the binaries hack/testbin/build.sh builds;
--assets or KUBEBUILDER_ASSETS), installs the TrainingJob CRD, registers
stand-in nodes whose pods run simulated trainers, runs the scheduler, and
writes a kubeconfig. Then, in another shell:

  export KUBECONFIG=<printed path>
  kubectl apply -f examples/
  kubectl get trainingjobs -w

With --for-helm it installs no CRD and runs no scheduler (which would
create the placeholder PriorityClass): the API server and the stand-in
nodes only, for ` + "`helm install drover charts/drover`" + `, which creates
them as Helm's own. (The chart's scheduler Deployment stays Pending: the
dev cluster has no kube-scheduler. Run ` + "`drover scheduler`" + ` against it.)

Stops on Ctrl-C.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cli.SetLogger(verbosity)
			if assets == "" {
				assets = os.Getenv("KUBEBUILDER_ASSETS")
			}
			if assets == "" {
				return fmt.Errorf("--assets or KUBEBUILDER_ASSETS must name the directory with etcd and kube-apiserver (run hack/testbin/build.sh)")
			}
			cfg, err := k8s.LoadConfig(config)
			if err != nil {
				return err
			}
			set, err := configKeys(config)
			if err != nil {
				return err
			}
			// --policy wins when given; the config's policy or profile
			// when it has one; else the flag's default.
			if cmd.Flags().Changed("policy") || (!set["policy"] && !set["profile"]) {
				cfg.Policy, cfg.Profile = policy, nil
			}
			// The metrics address: --metrics-addr, else the config's, else
			// 127.0.0.1:8080 when free and any free loopback port when not,
			// so that two dev clusters on one machine do not collide.
			pickMetrics := !cmd.Flags().Changed("metrics-addr") && !set["metricsAddr"]
			switch {
			case cmd.Flags().Changed("metrics-addr"):
				cfg.MetricsAddr = metricsAddr
			case pickMetrics:
				if cfg.MetricsAddr, err = freeAddr(metricsAddr); err != nil {
					return err
				}
			}
			cfg.HealthAddr = "0"
			env := &envtest.Environment{BinaryAssetsDirectory: assets}
			switch {
			case forHelm:
			case crdDir != "":
				env.CRDDirectoryPaths, env.ErrorIfCRDPathMissing = []string{crdDir}, true
			default:
				// The CRDs built into the binary: the command works
				// outside the repository.
				dir, err := os.MkdirTemp("", "drover-dev-cluster-crds")
				if err != nil {
					return err
				}
				defer os.RemoveAll(dir)
				if _, err := crd.WriteTo(dir); err != nil {
					return err
				}
				env.CRDDirectoryPaths, env.ErrorIfCRDPathMissing = []string{dir}, true
			}
			rc, err := env.Start()
			if err != nil {
				return fmt.Errorf("starting etcd and kube-apiserver: %w", err)
			}
			defer func() { _ = env.Stop() }()
			user, err := env.AddUser(envtest.User{Name: "dev-admin", Groups: []string{"system:masters"}}, nil)
			if err != nil {
				return fmt.Errorf("creating the admin user: %w", err)
			}
			kc, err := user.KubeConfig()
			if err != nil {
				return err
			}
			if kubeconfigOut, err = filepath.Abs(kubeconfigOut); err != nil {
				return err
			}
			if err := os.WriteFile(kubeconfigOut, kc, 0o600); err != nil {
				return fmt.Errorf("writing kubeconfig: %w", err)
			}
			rc.QPS, rc.Burst = 200, 400
			c, err := client.New(rc, client.Options{Scheme: k8s.Scheme()})
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			for _, ns := range []string{"drover-system"} {
				_ = c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
			}
			capacity, err := devNodeCapacity(cpu, gpu, mem, storage)
			if err != nil {
				return err
			}
			kube := standin.New(c, standin.Config{Nodes: nodes, Prefix: "node", TimeScale: scale, Capacity: capacity})
			if err := kube.RegisterNodes(ctx); err != nil {
				return err
			}
			if forHelm {
				go func() { _ = kube.Run(ctx) }()
				fmt.Fprintf(cmd.OutOrStdout(), "dev cluster up for helm: %d stand-in nodes (%s CPU, %s GPU each), no CRDs, no scheduler\n", nodes, cpu, gpu)
				fmt.Fprintf(cmd.OutOrStdout(), "KUBECONFIG=%s\n", kubeconfigOut)
				fmt.Fprintf(cmd.OutOrStdout(), "then: helm install drover charts/drover --namespace drover-system --create-namespace\n")
				<-ctx.Done()
				return nil
			}
			reg, err := plugins.Policies()
			if err != nil {
				return err
			}
			mgr, _, err := k8s.NewManager(rc, cfg, reg)
			if err != nil {
				return err
			}
			go func() { _ = kube.Run(ctx) }()
			name := "policy " + cfg.Policy
			if cfg.Profile != nil {
				name = "profile " + cfg.Profile.Name
			}
			fmt.Fprintf(cmd.OutOrStdout(), "dev cluster up: %d stand-in nodes (%s CPU, %s GPU each), %s, training time x%g\n", nodes, cpu, gpu, name, scale)
			if cfg.MetricsAddr != "0" {
				fmt.Fprintf(cmd.OutOrStdout(), "metrics: http://%s/metrics\n", cfg.MetricsAddr)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "KUBECONFIG=%s\n", kubeconfigOut)
			start := time.Now()
			err = mgr.Start(ctx)
			// Another dev cluster took the port between the check and the
			// bind (both started at once): take any free loopback port.
			for try := 0; pickMetrics && try < 3 && err != nil && ctx.Err() == nil && strings.Contains(err.Error(), "address already in use"); try++ {
				if cfg.MetricsAddr, err = freeAddr(net.JoinHostPort(hostOf(cfg.MetricsAddr), "0")); err != nil {
					return err
				}
				if mgr, _, err = k8s.NewManager(rc, cfg, reg); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "metrics: http://%s/metrics (the first address was taken)\n", cfg.MetricsAddr)
				err = mgr.Start(ctx)
			}
			ctrl.Log.Info("dev cluster stopping", "uptime", time.Since(start).Round(time.Second).String())
			if ctx.Err() != nil {
				return nil
			}
			return err
		},
	}
	cmd.Flags().StringVar(&assets, "assets", "", "directory with etcd and kube-apiserver (default $KUBEBUILDER_ASSETS)")
	cmd.Flags().StringVar(&crdDir, "crds", "", "CRD directory (default: the TrainingJob CRD built into drover)")
	cmd.Flags().BoolVar(&forHelm, "for-helm", false, "install no CRD and run no scheduler, leaving them (and the PriorityClass) to `helm install`")
	cmd.Flags().StringVar(&storage, "node-ephemeral-storage", "100Gi", "ephemeral storage per node")
	cmd.Flags().StringVar(&kubeconfigOut, "kubeconfig-out", filepath.Join(os.TempDir(), "drover-dev-cluster.kubeconfig"), "where to write the kubeconfig")
	cmd.Flags().StringVar(&config, "config", "", "scheduler config file")
	cmd.Flags().StringVar(&policy, "policy", devPolicy, "policy spec (default: the config's policy or profile, else the drover preset with SpeCon scaled to the 5x trainers)")
	cmd.Flags().StringVar(&metricsAddr, "metrics-addr", "127.0.0.1:8080", "where to serve /metrics (default: the config's metricsAddr, else this address when it is free, else a free loopback port)")
	cmd.Flags().IntVar(&nodes, "nodes", 4, "stand-in nodes")
	cmd.Flags().StringVar(&cpu, "node-cpu", "16", "CPU per node")
	cmd.Flags().StringVar(&gpu, "node-gpu", "4", "GPUs per node")
	cmd.Flags().StringVar(&mem, "node-memory", "64Gi", "memory per node")
	cmd.Flags().Float64Var(&scale, "time-scale", 5, "training seconds per wall second for the stand-in trainers")
	cmd.Flags().IntVarP(&verbosity, "verbosity", "v", 0, "log verbosity")
	return cmd
}

// configKeys returns the top-level keys a config file sets (none for no
// file), so that flags fill in only what the file leaves out.
func configKeys(path string) (map[string]bool, error) {
	set := map[string]bool{}
	if path == "" {
		return set, nil
	}
	b, err := textio.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("scheduler config %s: %w", path, err)
	}
	for k := range m {
		set[k] = true
	}
	return set, nil
}

// freeAddr returns addr when it can be listened on, else a free port on
// the same host.
func freeAddr(addr string) (string, error) {
	for _, a := range []string{addr, net.JoinHostPort(hostOf(addr), "0")} {
		l, err := net.Listen("tcp", a)
		if err != nil {
			continue
		}
		got := l.Addr().String()
		if err := l.Close(); err != nil {
			return "", err
		}
		return got, nil
	}
	return "", fmt.Errorf("no free port for metrics on %s", hostOf(addr))
}

func hostOf(addr string) string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil || h == "" {
		return "127.0.0.1"
	}
	return h
}

// devNodeCapacity is a dev-cluster node's capacity: the flags' CPU, GPUs,
// memory and ephemeral storage (an MPIJob launcher and other pods that
// request ephemeral-storage need it), and 110 pod slots.
func devNodeCapacity(cpu, gpu, mem, storage string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")}
	for _, f := range []struct {
		flag, value string
		name        corev1.ResourceName
	}{{"--node-cpu", cpu, corev1.ResourceCPU}, {"--node-gpu", gpu, k8s.GPUResource}, {"--node-memory", mem, corev1.ResourceMemory},
		{"--node-ephemeral-storage", storage, corev1.ResourceEphemeralStorage}} {
		q, err := resource.ParseQuantity(f.value)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", f.flag, f.value, err)
		}
		out[f.name] = q
	}
	return out, nil
}
