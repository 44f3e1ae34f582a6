package scheduler

import "context"

// claimRare is what a job's claim in progress seldom has: a firing that
// waits behind it (one that came while it was claimed; a later one
// replaces it, SkipOverrun), and the cancel of its wait for the job's
// lease elsewhere (OverlapBufferOne). Kept inline, they would cost every
// job 48 bytes for as long as it is registered; a job keeps a claimRare
// only while it has one of them. Only transition reads or writes it, with
// job.mu held.
type claimRare struct {
	next       firing
	hasNext    bool
	cancelWait context.CancelFunc
}

// nextFiring returns the firing that waits behind the claim, if any.
func (st *jobState) nextFiring() (firing, bool) {
	if st.rare == nil || !st.rare.hasNext {
		return firing{}, false
	}
	return st.rare.next, true
}

// setNext makes f the firing that waits behind the claim.
func (st *jobState) setNext(f firing) {
	if st.rare == nil {
		st.rare = new(claimRare)
	}
	st.rare.next, st.rare.hasNext = f, true
}

// dropNext forgets the firing that waits behind the claim.
func (st *jobState) dropNext() {
	if st.rare != nil {
		st.rare.next, st.rare.hasNext = firing{}, false
		st.tidyRare()
	}
}

// cancelWait returns what ends the claim's wait for the job's lease
// elsewhere, nil when it does not wait.
func (st *jobState) cancelWait() context.CancelFunc {
	if st.rare == nil {
		return nil
	}
	return st.rare.cancelWait
}

// setCancelWait sets what ends the claim's wait for the job's lease
// elsewhere; nil: it does not wait.
func (st *jobState) setCancelWait(cancel context.CancelFunc) {
	switch {
	case st.rare != nil:
		st.rare.cancelWait = cancel
		st.tidyRare()
	case cancel != nil:
		st.rare = &claimRare{cancelWait: cancel}
	}
}

// tidyRare drops claimRare once it holds nothing.
func (st *jobState) tidyRare() {
	if !st.rare.hasNext && st.rare.cancelWait == nil {
		st.rare = nil
	}
}
