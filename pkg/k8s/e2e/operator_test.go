package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/drover-sched/drover/internal/cli"
	"github.com/drover-sched/drover/internal/standin"
	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
	"github.com/drover-sched/drover/pkg/k8s"
)

// What an operator sees, from the API server: `drover queue` lists the
// waiting jobs in order with the policy's wait reasons; `kubectl get tj`
// (the server-side Table) has the Replicas column and, wide, Reason,
// Tenant, Attempt and the queue position; and the job-phase metrics count
// the waits and the completion.
func TestOperatorView(t *testing.T) {
	tc := newCluster(t, 1, "4", "0", standin.Config{TimeScale: 1})
	tc.tune = func(c *k8s.Config) {
		c.QueuePositionPeriod.Duration = 100 * time.Millisecond
		c.Tenants = map[string]string{tc.ns: "team-a"} // the operator's mapping names the tenant
	}
	m := k8s.DefaultMetrics()
	waitedBefore := histogramCount(t, m.WaitSeconds.WithLabelValues("BE"))
	doneBefore := metricValue(t, m.Completions.WithLabelValues("BE"))
	tc.startScheduler("fifo", nil)
	tc.create(tc.job("first", v1alpha1.ClassBE, 25, group{name: "worker", replicas: 1, cpu: "4", gpu: "0"}))
	tc.waitPhase("first", v1alpha1.PhaseRunning, 20*time.Second)
	second := tc.job("second", v1alpha1.ClassBE, 2, group{name: "worker", replicas: 2, cpu: "1", gpu: "0"})
	second.Spec.Tenant = "team-z" // ignored: a user cannot choose another team's tenant
	tc.create(second)
	time.Sleep(20 * time.Millisecond) // distinct creation order
	tc.create(tc.job("third", v1alpha1.ClassBE, 2, group{name: "worker", replicas: 1, cpu: "2", gpu: "0"}))

	// Both wait behind the running job with a position; the head of the
	// queue with fifo's reason (fifo gives none to the jobs behind it).
	tc.eventually("wait reasons and queue positions", 20*time.Second, func() (bool, string) {
		s, th := tc.get("second"), tc.get("third")
		ok := s.Status.Reason != "" && pos(s) == 1 && pos(th) == 2
		return ok, fmt.Sprintf("second %q pos %d, third %q pos %d", s.Status.Reason, pos(s), th.Status.Reason, pos(th))
	})
	reason := tc.get("second").Status.Reason

	// drover queue, against the API server through a kubeconfig.
	kubeconfig := writeKubeconfig(t, restCfg)
	out := runQueue(t, "--kubeconfig", kubeconfig, "--scheduler-namespace", tc.ns)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "POS") ||
		!strings.HasPrefix(lines[1], "1 ") || !strings.Contains(lines[1], " second ") || !strings.Contains(lines[1], reason) ||
		!strings.HasPrefix(lines[2], "2 ") || !strings.Contains(lines[2], " third ") {
		t.Errorf("drover queue printed:\n%s\nwant second then third, with the reason %q", out, reason)
	}
	var q []k8s.QueueEntry
	if err := json.Unmarshal([]byte(runQueue(t, "--kubeconfig", kubeconfig, "--scheduler-namespace", tc.ns, "-o", "json")), &q); err != nil {
		t.Fatal(err)
	}
	if len(q) != 2 || q[0].Name != "second" || q[0].Tenant != "team-a" || q[0].Replicas != 2 || q[0].Reason != reason || q[0].Kind != "TrainingJob" ||
		q[1].Name != "third" || q[1].Position != 2 {
		t.Errorf("drover queue -o json: %+v", q)
	}
	if got := runQueue(t, "--kubeconfig", kubeconfig, "--scheduler-namespace", tc.ns, "-n", "elsewhere"); !strings.Contains(got, "No jobs are waiting") {
		t.Errorf("another namespace: %q", got)
	}

	// The printer columns, as kubectl gets them from the API server.
	tab := table(t, tc.ns)
	var cols []string
	for _, c := range tab.ColumnDefinitions {
		name := c.Name
		if c.Priority > 0 {
			name += "(wide)"
		}
		cols = append(cols, name)
	}
	want := []string{"Name", "Class", "Phase", "Replicas", "Progress", "Preemptions", "Migrations", "Age",
		"Reason(wide)", "Tenant(wide)", "Attempt(wide)", "Queue(wide)"}
	if !slices.Equal(cols, want) {
		t.Errorf("columns %v, want %v", cols, want)
	}
	rows := map[string][]any{}
	for _, r := range tab.Rows {
		rows[fmt.Sprint(r.Cells[0])] = r.Cells
		// Progress is a whole percentage, not the float in full.
		if p := r.Cells[4]; p != nil && p != "" && !regexp.MustCompile(`^[0-9]{1,3}%$`).MatchString(fmt.Sprint(p)) {
			t.Errorf("%v: Progress cell %q, want a whole percentage", r.Cells[0], p)
		}
	}
	if c := tab.ColumnDefinitions[4]; c.Type != "string" {
		t.Errorf("Progress column has type %q, want string (status.progressSummary)", c.Type)
	}
	if r := rows["first"]; r == nil || r[2] != "Running" || r[3] != "1/1" || fmt.Sprint(r[10]) != "1" || r[11] != nil {
		t.Errorf("first: %v, want Running, 1/1, attempt 1, no queue position", r)
	}
	if r := rows["second"]; r == nil || r[2] != "Pending" || r[3] != "0/2" || r[8] != reason || r[9] != "team-a" || fmt.Sprint(r[11]) != "1" {
		t.Errorf("second: %v, want Pending, 0/2, the reason, tenant team-a, queue 1", r)
	}

	// Both start once the first completes; the metrics saw it all.
	tc.waitPhase("first", v1alpha1.PhaseSucceeded, 60*time.Second)
	for _, n := range []string{"second", "third"} {
		if tj := tc.waitPhase(n, v1alpha1.PhaseSucceeded, 30*time.Second); tj.Status.QueuePosition != nil {
			t.Errorf("%s kept its queue position %d after starting", n, *tj.Status.QueuePosition)
		}
	}
	if got := histogramCount(t, m.WaitSeconds.WithLabelValues("BE")) - waitedBefore; got != 3 {
		t.Errorf("drover_job_wait_seconds{class=BE} observed %v starts, want 3", got)
	}
	if got := metricValue(t, m.Completions.WithLabelValues("BE")) - doneBefore; got != 3 {
		t.Errorf("drover_job_completions_total{class=BE} rose by %v, want 3", got)
	}
	tc.eventually("drover_jobs", 5*time.Second, func() (bool, string) {
		v := metricValue(t, m.Jobs.WithLabelValues("Succeeded", "BE"))
		return v == 3, fmt.Sprintf("drover_jobs{phase=Succeeded,class=BE} = %v", v)
	})
}

func pos(tj *v1alpha1.TrainingJob) int32 {
	if tj.Status.QueuePosition == nil {
		return 0
	}
	return *tj.Status.QueuePosition
}

func runQueue(t *testing.T, args ...string) string {
	t.Helper()
	cmd := cli.NewQueueCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("drover queue %v: %v", args, err)
	}
	return out.String()
}

// writeKubeconfig writes a kubeconfig for the test API server.
func writeKubeconfig(t *testing.T, rc *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["e2e"] = &clientcmdapi.Cluster{Server: rc.Host, CertificateAuthorityData: rc.CAData}
	kc.AuthInfos["e2e"] = &clientcmdapi.AuthInfo{ClientCertificateData: rc.CertData, ClientKeyData: rc.KeyData, Token: rc.BearerToken}
	kc.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "e2e"}
	kc.CurrentContext = "e2e"
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// table lists the namespace's TrainingJobs as the server-side Table that
// kubectl get prints (wide columns included).
func table(t *testing.T, ns string) *metav1.Table {
	t.Helper()
	hc, err := rest.HTTPClientFor(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(restCfg.Host, "/")+"/apis/drover.dev/v1alpha1/namespaces/"+ns+"/trainingjobs", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s as Table: %v %d %s", req.URL, err, resp.StatusCode, b)
	}
	tab := &metav1.Table{}
	if err := json.Unmarshal(b, tab); err != nil {
		t.Fatal(err)
	}
	return tab
}

func histogramCount(t *testing.T, o prometheus.Observer) float64 {
	t.Helper()
	var m dto.Metric
	if err := o.(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return float64(m.GetHistogram().GetSampleCount())
}

func metricValue(t *testing.T, c prometheus.Metric) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	if g := m.GetGauge(); g != nil {
		return g.GetValue()
	}
	return m.GetCounter().GetValue()
}
