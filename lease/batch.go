package lease

import (
	"context"
	"time"
)

// AcquireRequest is one acquire of a batch (BatchAcquirer): the arguments
// of Store.Acquire.
type AcquireRequest struct {
	Key     string
	TTL     time.Duration
	Options []AcquireOption
}

// AcquireResult is the answer to one AcquireRequest: what Store.Acquire
// would have returned.
type AcquireResult struct {
	Lease *Lease
	Err   error
}

// BatchAcquirer is an optional interface of a Store that can send several
// acquires in one round trip. lease/redislease and lease/memory implement
// it.
//
// AcquireBatch makes one attempt for each request, as Store.Acquire does,
// and writes each answer to the result at the same index: results must be
// as long as reqs. Every request is answered on its own, with the errors
// Acquire would give it (an invalid request fails alone, without I/O, and
// does not keep the others from being sent); nothing about the batch is
// atomic: the acquires are independent, as if made one after the other in
// an unspecified order. AcquireBatch blocks until every answer is known or
// ctx is done.
type BatchAcquirer interface {
	AcquireBatch(ctx context.Context, reqs []AcquireRequest, results []AcquireResult)
}

// RoundReader is an optional interface of a Store that can read the
// rounds recorded for several keys in one round trip, without a script
// and without taking anything. lease/redislease and lease/memory
// implement it.
//
// LastRounds sets rounds[i] to the last round recorded for keys[i] (0
// when none was: a fresh key, or a store that lost its data); rounds must
// be as long as keys. A round recorded is claimed: an Acquire WithRound of
// it or of an earlier round answers ErrRoundClaimed. The reads are not one
// snapshot: each key's is its own. A key that is not valid fails the whole
// call with ErrInvalidArgument, before any I/O. A key whose record cannot
// be read (another type, or not this store's form) answers zero and is
// named in an *UnreadableKeysError, returned once every other key is read
// (see UnreadKeys); any other error leaves no answer to trust. A store may
// read a record of another type as none instead, as its acquire does
// (lease/redislease reads many keys with MGET where it can).
//
// LastRuns sets spans[i] to the span of the last run recorded for keys[i]
// (fleet.Store's ReleaseWithStatus: its start in the store's time, and its
// end, that start plus its duration), zero when none was recorded; spans
// must be as long as keys. While a lease holds keys[i], the span is its
// holder's instead, from its acquisition to its expiry: the run in
// progress, which its release has not recorded yet. The holder and the
// record are read together, and a release removes the one and writes the
// other at once, so a run that held the key at some instant is covered
// by one of them. A store that records no runs sets every span of a key
// not held to zero. Like LastRounds, it reads without a script.
type RoundReader interface {
	LastRounds(ctx context.Context, keys []string, rounds []int64) error
	LastRuns(ctx context.Context, keys []string, spans []RunSpan) error
}

// RunSpan is when a recorded run held its key: from Start to End, in the
// store's time. The zero RunSpan is no run.
type RunSpan struct {
	Start, End time.Time
}

// Covers reports whether the run held its key at t: Start <= t < End.
func (r RunSpan) Covers(t time.Time) bool {
	return !r.Start.IsZero() && !t.Before(r.Start) && t.Before(r.End)
}
