package experiment

import (
	"context"
	"fmt"
	"runtime"
	"sync"
)

// WorkerCount is how many runs an experiment runs at once: Env.Workers
// when positive, else GOMAXPROCS.
func (e *Env) WorkerCount() int {
	if e.Workers > 0 {
		return e.Workers
	}
	return runtime.GOMAXPROCS(0)
}

// Parallel runs task(0) ... task(n-1), up to env.WorkerCount() at once,
// and returns their results in index order. It is how an experiment runs
// its seeds and policies on every core: each task is one independent
// simulation (it builds its own policy, jobs and simulator, and shares
// only immutable inputs), and everything derived from the results is
// computed after Parallel returns, in index order, so the output is
// byte-identical to a serial run whatever the number of workers (tested
// in pkg/registry).
//
// Tasks are handed out in index order. When one fails, no further task is
// started, the running ones finish, and the error of the lowest failed
// index is returned: the error a serial run would have stopped at.
//
// Progress: when env.Progress is set, Parallel reports under label the
// number of tasks done and, through the report function each task gets,
// the fraction of a task done (a long simulation passes its
// sim.Config.OnProgress counts); calls to env.Progress are serialised.
func Parallel[T any](ctx context.Context, env *Env, label string, n int, task func(ctx context.Context, i int, report func(done, total int)) (T, error)) ([]T, error) {
	out := make([]T, n)
	errs := make([]error, n)
	p := newProgress(env, label, n)
	workers := min(env.WorkerCount(), n)
	if workers <= 1 {
		for i := range n {
			v, err := task(ctx, i, p.reporter(i))
			if err != nil {
				return nil, err
			}
			out[i] = v
			p.finish(i)
		}
		return out, nil
	}
	var (
		mu     sync.Mutex
		next   int
		failed bool
		wg     sync.WaitGroup
	)
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if failed || next >= n {
			return 0, false
		}
		next++
		return next - 1, true
	}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i, ok := take()
				if !ok {
					return
				}
				v, err := task(ctx, i, p.reporter(i))
				if err != nil {
					mu.Lock()
					errs[i], failed = err, true
					mu.Unlock()
					continue
				}
				out[i] = v
				p.finish(i)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// progress combines the progress of parallel tasks into one bar: the
// label says how many tasks are done, and the bar fills with the sum of
// the tasks' fractions.
type progress struct {
	mu    sync.Mutex
	env   *Env
	label string
	frac  []float64
	done  int
}

// progressScale is the resolution of one task's share of the bar.
const progressScale = 1000

func newProgress(env *Env, label string, n int) *progress {
	if env.Progress == nil {
		return nil
	}
	return &progress{env: env, label: label, frac: make([]float64, n)}
}

// reporter returns task i's report function (nil when nobody listens).
func (p *progress) reporter(i int) func(done, total int) {
	if p == nil {
		return nil
	}
	return func(done, total int) {
		if total > 0 {
			p.set(i, float64(done)/float64(total), false)
		}
	}
}

func (p *progress) finish(i int) {
	if p != nil {
		p.set(i, 1, true)
	}
}

func (p *progress) set(i int, f float64, finished bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.frac[i] = min(f, 1)
	if finished {
		p.done++
	}
	sum := 0.0
	for _, x := range p.frac {
		sum += x
	}
	n := len(p.frac)
	label := p.label
	if n > 1 {
		label = fmt.Sprintf("%s (%d/%d runs)", p.label, p.done, n)
	}
	p.env.Progress(label, int(sum*progressScale), n*progressScale)
}
