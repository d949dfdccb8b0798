package k8s

import (
	"context"
	"fmt"
	"sync"
)

// flight is a job's writes run on the executor's start workers, possibly
// past the end of the cycle that decided them (Run pipelines them): a
// start (status write, pods, Bindings), or the status write that records
// a job's end. committed is closed once the decision is recorded on the
// API server (for a TrainingJob's start, its status write: the
// placement; otherwise when done), done once every call returned, with
// err set.
type flight struct {
	id              string
	committed, done chan struct{}
	err             error
}

// flights tracks the writes in flight. The executor never acts on a stale
// view of them: a cycle waits until every flight of earlier cycles is
// committed before it reads the world (so a started job is read placed,
// its capacity charged, and an ended job ended, from Executor.written if
// the cache lags), leaves
// alone the jobs whose pods are still being created (Read records them
// in World.busy: not reconciled), and an action on such a job waits
// until its start is done.
type flights struct {
	mu  sync.Mutex
	by  map[string]*flight
	all sync.WaitGroup
	sem chan struct{}
	// errs are the errors of starts that ended after their cycle did; the
	// next cycle reports them.
	errs []error
}

// launch runs f as a start of job id on a start worker and returns its
// flight. f calls commit once the start is recorded; it is committed
// anyway when f returns.
func (e *Executor) launch(id string, f func(commit func()) error) *flight {
	fs := &e.flights
	fs.mu.Lock()
	if fs.by == nil {
		fs.by = map[string]*flight{}
		fs.sem = make(chan struct{}, startWorkers)
	}
	fl := &flight{id: id, committed: make(chan struct{}), done: make(chan struct{})}
	fs.by[id] = fl
	fs.all.Add(1)
	fs.mu.Unlock()
	go func() {
		defer fs.all.Done()
		fs.sem <- struct{}{}
		var once sync.Once
		commit := func() { once.Do(func() { close(fl.committed) }) }
		fl.err = f(commit)
		<-fs.sem
		commit()
		fs.mu.Lock()
		if fs.by[id] == fl {
			delete(fs.by, id)
		}
		fs.mu.Unlock()
		close(fl.done)
	}()
	return fl
}

// awaitFlight waits until the start of job id in flight, if any, is done.
func (e *Executor) awaitFlight(id string) {
	e.flights.mu.Lock()
	fl := e.flights.by[id]
	e.flights.mu.Unlock()
	if fl != nil {
		<-fl.done
	}
}

// awaitCommitted waits until every start in flight is committed, or ctx
// is done.
func (e *Executor) awaitCommitted(ctx context.Context) error {
	e.flights.mu.Lock()
	var wait []*flight
	for _, fl := range e.flights.by {
		wait = append(wait, fl)
	}
	e.flights.mu.Unlock()
	for _, fl := range wait {
		select {
		case <-fl.committed:
		case <-ctx.Done():
			return fmt.Errorf("waiting for the starts in flight: %w", ctx.Err())
		}
	}
	return nil
}

// inFlight returns the jobs whose starts are still in flight.
func (e *Executor) inFlight() map[string]bool {
	e.flights.mu.Lock()
	defer e.flights.mu.Unlock()
	if len(e.flights.by) == 0 {
		return nil
	}
	out := make(map[string]bool, len(e.flights.by))
	for id := range e.flights.by {
		out[id] = true
	}
	return out
}

// drain waits for every start in flight.
func (e *Executor) drain() { e.flights.all.Wait() }

// late records the errors of a cycle's starts that were still in flight
// when it ended, once they are done, for the next cycle to report.
func (e *Executor) late(fls []*flight) {
	for _, fl := range fls {
		go func() {
			<-fl.done
			if fl.err != nil {
				e.flights.mu.Lock()
				e.flights.errs = append(e.flights.errs, fmt.Errorf("job %s: %w", fl.id, fl.err))
				e.flights.mu.Unlock()
			}
		}()
	}
}

// lateErrs returns and clears the errors late recorded.
func (e *Executor) lateErrs() []error {
	e.flights.mu.Lock()
	defer e.flights.mu.Unlock()
	errs := e.flights.errs
	e.flights.errs = nil
	return errs
}
