package memory

import (
	"context"
	"fmt"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// History returns key's recorded runs, newest first. See fleet.Store.
func (s *Store) History(ctx context.Context, key string, offset, limit int) ([]fleet.RunRecord, int, error) {
	const op = "history"
	key, err := lease.NormalizeKey(key)
	if err != nil {
		return nil, 0, opError(op, err)
	}
	if offset < 0 || limit < 0 {
		return nil, 0, opError(op, fmt.Errorf("%w: offset and limit must not be negative, got %d and %d", lease.ErrInvalidArgument, offset, limit))
	}
	if err := ctxError(ctx); err != nil {
		return nil, 0, opError(op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ks := s.keys[key]
	if ks == nil {
		return nil, 0, nil
	}
	kept := ks.history[max(0, len(ks.history)-s.historyLimit):]
	total := len(kept)
	if offset >= total || limit == 0 {
		return nil, total, nil
	}
	n := min(limit, s.historyLimit, total-offset)
	runs := make([]fleet.RunRecord, n)
	for i := range runs {
		runs[i] = kept[total-1-offset-i]
	}
	return runs, total, nil
}

// record appends run to the key's history, keeping at least its last limit
// runs: the slice is cut back to limit whenever it reaches twice that, so a
// record costs amortized O(1) and a key holds at most 2×limit runs.
func (ks *keyState) record(run fleet.RunRecord, limit int) {
	if len(ks.history) >= 2*limit {
		ks.history = append(make([]fleet.RunRecord, 0, 2*limit), ks.history[len(ks.history)-limit+1:]...)
	}
	ks.history = append(ks.history, run)
}
