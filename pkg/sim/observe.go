package sim

// Observed is what a Config.Observe hook is told happened to a job: an
// applied action or a job's own transition. It is a typed kind, not free
// text, so that a recorder's switch is checked by the compiler's constant
// types and a misspelt kind does not silently match nothing.
type Observed string

// The kinds a hook sees.
const (
	ObsStart    Observed = "start"    // a Start was applied
	ObsPreempt  Observed = "preempt"  // a Preempt was applied (grace begins)
	ObsSuspend  Observed = "suspend"  // the job left its nodes and was requeued
	ObsMigrate  Observed = "migrate"  // a Migrate was applied
	ObsResize   Observed = "resize"   // a Resize was applied
	ObsReject   Observed = "reject"   // the job was rejected for good
	ObsComplete Observed = "complete" // the job finished
)
