package redislease

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// historySlack is how many entries a job's history list may hold beyond
// the store's limit: max(limit/4, 8). The scripts that push on the list
// trim it back to the limit only when it is longer than limit + slack (one
// LTRIM in slack + 1 pushes, not one per push), so the list holds at most
// limit + slack entries, and History reads only the first limit of them.
func historySlack(limit int) int { return max(limit/4, 8) }

// History returns key's recorded runs, newest first. See fleet.Store.
//
// It reads the job's history list with LRANGE and LLEN, pipelined in one
// round trip (plain commands, no script: a read-only ACL user needs
// +lrange +llen only); the two are not one atomic read, so a release
// between them can make total one more than the runs read suggest. The
// list is in the job's slot, P:history:{G}, written by ReleaseWithStatus.
// It may hold up to historySlack entries beyond the limit (trimmed in
// batches): those are never returned nor counted, so a reader sees the
// store's limit of runs at most, as if each push had trimmed.
func (s *Store) History(ctx context.Context, key string, offset, limit int) ([]fleet.RunRecord, int, error) {
	const op = "history"
	ks, what, err := s.keysForOp(op, key)
	if err != nil {
		return nil, 0, err
	}
	if offset < 0 || limit < 0 {
		return nil, 0, opErr(op, what, fmt.Errorf("%w: offset and limit must not be negative, got %d and %d", lease.ErrInvalidArgument, offset, limit))
	}
	hk := ks.history(s.prefix)
	limit = min(limit, s.historyLimit-offset)
	if limit <= 0 {
		n, err := s.client.Do(ctx, s.client.B().Llen().Key(hk).Build()).AsInt64()
		if err != nil {
			return nil, 0, wrapErr(ctx, op, what, err)
		}
		return nil, min(int(n), s.historyLimit), nil
	}
	res := s.client.DoMulti(ctx,
		s.client.B().Lrange().Key(hk).Start(int64(offset)).Stop(int64(offset+limit-1)).Build(),
		s.client.B().Llen().Key(hk).Build())
	raws, err := res[0].AsStrSlice()
	if err != nil {
		return nil, 0, wrapErr(ctx, op, what, err)
	}
	n, err := res[1].AsInt64()
	if err != nil {
		return nil, 0, wrapErr(ctx, op, what, err)
	}
	total := min(int(n), s.historyLimit)
	if len(raws) == 0 {
		return nil, total, nil
	}
	runs := make([]fleet.RunRecord, len(raws))
	for i, raw := range raws {
		var r statusRecord
		if err := json.Unmarshal([]byte(raw), &r); err != nil {
			return nil, 0, internalErr(op, what, fmt.Errorf("%w: history entry is not JSON", lease.ErrInternal))
		}
		runs[i] = r.status().Record()
	}
	return runs, total, nil
}
