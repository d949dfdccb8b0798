package e2e

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/drover-sched/drover/internal/standin"
	"github.com/drover-sched/drover/pkg/apis/drover/v1alpha1"
)

// faultProxy is a loopback TCP proxy in front of the API server. The
// scheduler talks to the API server only through it, so cutting it is a
// real network fault for the scheduler's informers (their watches are
// streams on these connections) while the test's own client and the
// stand-in kubelet keep talking to the API server directly.
//
// envtest cannot restart its kube-apiserver in place: APIServer.Stop
// deletes the generated certificate directory and a new Start makes a new
// serving CA, so every existing rest.Config would fail TLS afterwards.
type faultProxy struct {
	target string
	addr   string // fixed after the first listen, so clients reconnect to the same place

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
}

// newFaultProxy listens on a free loopback port and forwards to target
// (host:port).
func newFaultProxy(t *testing.T, target string) *faultProxy {
	t.Helper()
	p := &faultProxy{target: target, conns: map[net.Conn]struct{}{}}
	if err := p.up("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.down() })
	return p
}

// up starts accepting on addr again.
func (p *faultProxy) up(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("proxy listen on %s: %w", addr, err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	go p.accept(ln)
	return nil
}

// down closes the listener (new connections are refused) and every open
// connection in both directions; it returns how many client connections it
// cut.
func (p *faultProxy) down() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	cut := 0
	for c := range p.conns {
		_ = c.Close()
		cut++
	}
	clear(p.conns)
	return cut / 2 // each proxied connection is a client and a server side
}

func (p *faultProxy) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return // closed by down
		}
		go p.serve(c)
	}
}

func (p *faultProxy) serve(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	if p.ln == nil { // went down while dialing
		p.mu.Unlock()
		_ = c.Close()
		_ = s.Close()
		return
	}
	p.conns[c], p.conns[s] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(s, c)
	go pipe(c, s)
	<-done
	_ = c.Close()
	_ = s.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, s)
	p.mu.Unlock()
}

// The scheduler loses every connection to the API server (its watches
// included) for a few seconds while it runs jobs. A job created during the
// outage and one created after it are scheduled once the connection is
// back, which needs the informers to re-establish their watches (the cycle
// reads only the cache); the jobs from before keep their pods and bindings:
// none is restarted, recreated or bound twice.
func TestLostWatchReconnects(t *testing.T) {
	tc := newCluster(t, 2, "8", "4", standin.Config{TimeScale: 1})
	u, err := url.Parse(restCfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	px := newFaultProxy(t, u.Host)
	rc := rest.CopyConfig(restCfg)
	rc.Host = "https://" + px.addr
	// The serving certificate names 127.0.0.1, as does the proxy address.
	tc.rest = rc
	tc.startScheduler("fifo", nil)

	mk := func(name string) *v1alpha1.TrainingJob {
		return tc.job(name, v1alpha1.ClassBE, 600, group{name: "worker", replicas: 2, cpu: "2", gpu: "1"})
	}
	before := []string{"before-0", "before-1"}
	for _, n := range before {
		tc.create(mk(n))
	}
	type bound struct{ uid, node string }
	was := map[string]bound{} // pod name -> what it was before the outage
	for _, n := range before {
		tc.waitPhase(n, v1alpha1.PhaseRunning, 20*time.Second)
		for _, p := range tc.pods(n) {
			was[p.Name] = bound{string(p.UID), p.Spec.NodeName}
		}
	}
	if len(was) != 4 {
		t.Fatalf("%d pods before the outage, want 4", len(was))
	}

	cut := px.down()
	if cut == 0 {
		t.Fatal("the scheduler had no open connection to cut; the test breaks no watch")
	}
	t.Logf("cut %d connections", cut)
	tc.create(mk("during"))
	time.Sleep(3 * time.Second)
	// The fault is real: the scheduler could not act on the new job.
	if pods := tc.pods("during"); len(pods) != 0 || tc.get("during").Status.Phase == v1alpha1.PhaseRunning {
		t.Fatalf("job created during the outage got %d pods, phase %s, while the scheduler was cut off", len(pods), tc.get("during").Status.Phase)
	}
	if err := px.up(px.addr); err != nil {
		t.Fatal(err)
	}
	tc.create(mk("after"))
	for _, n := range []string{"during", "after"} {
		tc.waitPhase(n, v1alpha1.PhaseRunning, 30*time.Second)
	}
	// A few more cycles on the reconnected cache, then check nothing from
	// before the outage was lost, restarted or bound twice.
	time.Sleep(500 * time.Millisecond)
	for _, n := range append(before, "during", "after") {
		tj := tc.get(n)
		if tj.Status.Phase != v1alpha1.PhaseRunning || tj.Status.Attempt != 1 || tj.Status.Preemptions != 0 {
			t.Errorf("job %s: phase %s attempt %d preemptions %d, want Running, 1, 0", n, tj.Status.Phase, tj.Status.Attempt, tj.Status.Preemptions)
		}
		pods := tc.pods(n)
		if len(pods) != 2 {
			t.Errorf("job %s has %d pods, want 2", n, len(pods))
		}
		for _, p := range pods {
			if p.Spec.NodeName == "" || p.Spec.NodeName != p.Annotations[v1alpha1.AnnotationNode] {
				t.Errorf("pod %s bound to %q, assigned %q", p.Name, p.Spec.NodeName, p.Annotations[v1alpha1.AnnotationNode])
			}
			if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
				t.Errorf("pod %s: phase %s deleting %v", p.Name, p.Status.Phase, p.DeletionTimestamp != nil)
			}
			if w, ok := was[p.Name]; ok && (w.uid != string(p.UID) || w.node != p.Spec.NodeName) {
				t.Errorf("pod %s was %s on %s before the outage, now %s on %s", p.Name, w.uid, w.node, p.UID, p.Spec.NodeName)
			}
		}
	}
	assertNoOvercommit(t, tc)
	if err := ctxErr(tc); err != nil {
		t.Error(err)
	}
}

// ctxErr reports a scheduler that stopped on its own during the test (the
// manager exits on an unrecoverable error; a lost watch must not be one).
func ctxErr(tc *testCluster) error {
	select {
	case <-tc.done:
		return errors.New("the scheduler's manager exited during the test")
	default:
		return nil
	}
}
