package apply

import (
	"context"
	"fmt"
	"sync"
)

// Flight is a job's writes run on the executor's start workers, possibly
// past the end of the cycle that decided them (Run pipelines them): a
// start (status write, pods, Bindings), or the status write that records
// a job's end. committed is closed once the decision is recorded on the
// API server (for a TrainingJob's start, its status write: the
// placement; otherwise when done), done once every call returned, with
// err set.
type Flight struct {
	id              string
	committed, done chan struct{}
	err             error
}

// flights tracks the writes in flight. The executor never acts on a stale
// view of them: a cycle waits until every flight of earlier cycles is
// committed before it reads the world (so a started job is read placed,
// its capacity charged, and an ended job ended, from Writer.written if
// the cache lags), leaves
// alone the jobs whose pods are still being created (Read records them
// in World.busy: not reconciled), and an action on such a job waits
// until its start is done.
type flights struct {
	mu  sync.Mutex
	by  map[string]*Flight
	all sync.WaitGroup
	sem chan struct{}
	// errs are the errors of starts that ended after their cycle did; the
	// next cycle reports them.
	errs []error
}

// Launch runs f as a start of job id on a start worker and returns its
// flight. f calls commit once the start is recorded; it is committed
// anyway when f returns.
func (w *Writer) Launch(id string, f func(commit func()) error) *Flight {
	fs := &w.flights
	fs.mu.Lock()
	if fs.by == nil {
		fs.by = map[string]*Flight{}
		fs.sem = make(chan struct{}, Workers)
	}
	fl := &Flight{id: id, committed: make(chan struct{}), done: make(chan struct{})}
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

// AwaitFlight waits until the start of job id in flight, if any, is done.
func (w *Writer) AwaitFlight(id string) {
	w.flights.mu.Lock()
	fl := w.flights.by[id]
	w.flights.mu.Unlock()
	if fl != nil {
		<-fl.done
	}
}

// AwaitCommitted waits until every start in flight is committed, or ctx
// is done.
func (w *Writer) AwaitCommitted(ctx context.Context) error {
	w.flights.mu.Lock()
	var wait []*Flight
	for _, fl := range w.flights.by {
		wait = append(wait, fl)
	}
	w.flights.mu.Unlock()
	for _, fl := range wait {
		select {
		case <-fl.committed:
		case <-ctx.Done():
			return fmt.Errorf("waiting for the starts in flight: %w", ctx.Err())
		}
	}
	return nil
}

// InFlight returns the jobs whose starts are still in flight.
func (w *Writer) InFlight() map[string]bool {
	w.flights.mu.Lock()
	defer w.flights.mu.Unlock()
	if len(w.flights.by) == 0 {
		return nil
	}
	out := make(map[string]bool, len(w.flights.by))
	for id := range w.flights.by {
		out[id] = true
	}
	return out
}

// Drain waits for every start in flight.
func (w *Writer) Drain() { w.flights.all.Wait() }

// Late records the errors of a cycle's starts that were still in flight
// when it ended, once they are done, for the next cycle to report.
func (w *Writer) Late(fls []*Flight) {
	for _, fl := range fls {
		go func() {
			<-fl.done
			if fl.err != nil {
				w.flights.mu.Lock()
				w.flights.errs = append(w.flights.errs, fmt.Errorf("job %s: %w", fl.id, fl.err))
				w.flights.mu.Unlock()
			}
		}()
	}
}

// LateErrs returns and clears the errors Late recorded.
func (w *Writer) LateErrs() []error {
	w.flights.mu.Lock()
	defer w.flights.mu.Unlock()
	errs := w.flights.errs
	w.flights.errs = nil
	return errs
}
