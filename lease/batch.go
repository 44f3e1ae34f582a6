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
// call with ErrInvalidArgument, before any I/O.
type RoundReader interface {
	LastRounds(ctx context.Context, keys []string, rounds []int64) error
}
