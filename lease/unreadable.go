package lease

import (
	"errors"
	"fmt"
)

// UnreadableKeysError reports the keys of a read of many keys that a store
// could not read: a value of another type, or not in a form this version
// reads (written by hand, or by another program under the same prefix).
// RoundReader's LastRounds and LastRuns and fleet.TriggerCounter's
// PendingTriggersBatch return it once they have read every other key: the
// answers for those are set as if no error were returned, and the answers
// for the keys it names are zero. So one such key does not hide the
// others, which a scheduler reads together at every firing.
//
// Err is the first key's error and wraps ErrInternal.
type UnreadableKeysError struct {
	// Keys are the indexes, into the call's keys, of the keys that could
	// not be read, in ascending order; never empty.
	Keys []int
	// Err is why the first of them could not be read.
	Err error
}

// Error says how many keys could not be read, and why the first could
// not. It names no key: a caller that knows what the keys stand for names
// them (a scheduler, its jobs).
func (e *UnreadableKeysError) Error() string {
	first := -1
	if len(e.Keys) > 0 {
		first = e.Keys[0]
	}
	if len(e.Keys) <= 1 {
		return fmt.Sprintf("key %d of the read: %v", first, e.Err)
	}
	return fmt.Sprintf("%d keys of the read, the first key %d: %v", len(e.Keys), first, e.Err)
}

// Unwrap returns Err.
func (e *UnreadableKeysError) Unwrap() error { return e.Err }

// UnreadKeys tells what a read of many keys that returned err answered.
// With a nil err every key was read (rest true, keys nil); with an
// *UnreadableKeysError every key but its Keys was read (rest true); with
// any other error nothing can be trusted (rest false).
func UnreadKeys(err error) (keys []int, rest bool) {
	if err == nil {
		return nil, true
	}
	var ue *UnreadableKeysError
	if errors.As(err, &ue) {
		return ue.Keys, true
	}
	return nil, false
}
