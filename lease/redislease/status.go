package redislease

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/internal/luascripts"
	"github.com/cronguard/cronguard/lease"
)

// releaseStatusSHA is the SHA-1 of release_status.lua, for EVALSHA in a
// pipeline (execWithIndex).
var releaseStatusSHA = scriptSHA(luascripts.ReleaseStatus)

// execWithIndex runs a script (by its SHA-1, and again by its source when
// the server answers NOSCRIPT) pipelined with one command on the index of
// open occurrences, in one round trip; the index sits in a slot of its
// own, so the command is not part of the script. It returns the script's
// result; an error of the index command is logged (the index is a hint).
func (s *Store) execWithIndex(ctx context.Context, sha, src string, keys, args []string, index func() rueidis.Completed) rueidis.RedisResult {
	// Commands are recycled once sent: the retry builds its own.
	res := s.client.DoMulti(ctx,
		s.client.B().Evalsha().Sha1(sha).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build(), index())
	if isNoScript(res[0].Error()) {
		res = s.client.DoMulti(ctx,
			s.client.B().Eval().Script(src).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build(), index())
	}
	if err := res[1].Error(); err != nil && res[0].Error() == nil {
		s.log.Warn("could not update the index of open occurrences", "error", err)
	}
	return res[0]
}

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
// history (trimmed with slack, see WithHistoryLimit) in the same script. It returns
// how many triggers wait for the key. See fleet.Store. st.Error is
// sanitized (fleet.SanitizeError) before it is stored.
func (s *Store) ReleaseWithStatus(ctx context.Context, l *lease.Lease, st fleet.Status) (int, error) {
	const op = "release"
	if l == nil {
		return 0, opErr(op, "", fmt.Errorf("%w: lease must not be nil", lease.ErrInvalidArgument))
	}
	if err := validateClose(st); err != nil {
		return 0, opErr(op, "", err)
	}
	c, err := s.releaseCall(0, l, st)
	if err != nil {
		return 0, internalErr(op, leaseName(l.ID), err)
	}
	if c.alone {
		return 0, s.Release(ctx, l.ID)
	}
	var resp rueidis.RedisResult
	if c.withAttempts {
		resp = s.execWithIndex(ctx, releaseStatusSHA, luascripts.ReleaseStatus, c.keys, c.args, func() rueidis.Completed { return s.indexCmd(l, st) })
	} else {
		resp = releaseStatusScript.Exec(ctx, s.client, c.keys, c.args)
	}
	return s.releaseAnswer(ctx, l, c.withAttempts, resp)
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
