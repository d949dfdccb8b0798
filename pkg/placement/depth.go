package placement

// Depth is the number of Forks not yet committed or reverted. A caller
// that must abandon whatever nested what-ifs were left open (the
// framework's guard after a plugin panicked mid-fork) reverts until the
// depth is back to what it saw before.
func (l *Ledger) Depth() int { return len(l.marks) }
