package redislease

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// statusRecord is a fleet.Status as stored (JSON), with times in Unix ms.
type statusRecord struct {
	Occurrence int64  `json:"occurrence"`
	Owner      string `json:"owner"`
	Replica    string `json:"replica,omitempty"`
	Attempt    int    `json:"attempt,omitempty"`
	Fence      uint64 `json:"fence"`
	StartedAt  int64  `json:"startedAt"`
	DurationMs int64  `json:"durationMs"`
	Outcome    string `json:"outcome"`
	Error      string `json:"error,omitempty"`
	Trigger    string `json:"trigger,omitempty"`
	Missed     int    `json:"missed,omitempty"`
}

// ReleaseWithStatus releases l as ReleaseLease does and, when l still held
// its key, records st as the key's last run and pushes it on the key's
// history (trimmed to WithHistoryLimit) in the same script. It returns
// how many triggers wait for the key. See fleet.Store. st.Error is
// sanitized (fleet.SanitizeError) before it is stored.
func (s *Store) ReleaseWithStatus(ctx context.Context, l *lease.Lease, st fleet.Status) (int, error) {
	const op = "release"
	if l == nil {
		return 0, opErr(op, "", fmt.Errorf("%w: lease must not be nil", lease.ErrInvalidArgument))
	}
	data, index, head, ok := heldKeys(s.prefix, l.Key, l.ID)
	if !ok {
		return 0, s.Release(ctx, l.ID)
	}
	ks, err := keysFor(s.prefix, l.Key)
	if err != nil {
		return 0, s.Release(ctx, l.ID)
	}
	raw, err := json.Marshal(statusRecord{
		Occurrence: st.Occurrence.UnixMilli(),
		Owner:      st.Owner,
		Replica:    st.Replica,
		Attempt:    st.Attempt,
		Fence:      uint64(st.Fence),
		StartedAt:  st.Started.UnixMilli(),
		DurationMs: st.Duration.Milliseconds(),
		Outcome:    st.Outcome,
		Error:      fleet.SanitizeError(st.Error),
		Trigger:    st.Trigger,
		Missed:     st.Missed,
	})
	if err != nil {
		return 0, internalErr(op, leaseName(l.ID), err)
	}
	resp := releaseStatusScript.Exec(ctx, s.client,
		[]string{data, index, ks.status(s.prefix), ks.trigger(s.prefix), ks.history(s.prefix)},
		[]string{head, string(raw), s.historyLast})
	if err := resp.Error(); err != nil {
		return 0, wrapErr(ctx, op, leaseName(l.ID), err)
	}
	r, err := intsReply(resp)
	if err != nil || r.n != 2 {
		return 0, internalErr(op, leaseName(l.ID), fmt.Errorf("%w: %v", errBadReply, r.v[:r.n]))
	}
	switch r.v[0] {
	case codeDone:
		return int(r.v[1]), nil
	case codeElsewhere:
		return 0, s.Release(ctx, l.ID)
	}
	return 0, notHeldCode(op, l.ID, r.v[0])
}

// LastStatus returns the last run recorded for key, and false if none.
func (s *Store) LastStatus(ctx context.Context, key string) (fleet.Status, bool, error) {
	const op = "status"
	ks, what, err := s.keysForOp(op, key)
	if err != nil {
		return fleet.Status{}, false, err
	}
	v, err := s.client.Do(ctx, s.client.B().Get().Key(ks.status(s.prefix)).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return fleet.Status{}, false, nil
	}
	if err != nil {
		return fleet.Status{}, false, wrapErr(ctx, op, what, err)
	}
	var r statusRecord
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		return fleet.Status{}, false, internalErr(op, what, fmt.Errorf("%w: status is not JSON", lease.ErrInternal))
	}
	return r.status(), true, nil
}
