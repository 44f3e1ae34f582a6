package redislease

import (
	"context"

	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// var _ fleet.Store is asserted in channel.go, where the last method is.

// replicaRecord is a fleet.Replica as stored (JSON).
type replicaRecord struct {
	ID        string      `json:"id"`
	Version   string      `json:"version"`
	StartedAt int64       `json:"startedAt"`
	RefreshMs int64       `json:"refreshMs"`
	Jobs      []jobRecord `json:"jobs"`
	OffsetMs  int64       `json:"clockOffsetMs,omitempty"`
}

type jobRecord struct {
	Name        string `json:"name"`
	Key         string `json:"key"`
	Schedule    string `json:"schedule"`
	Spec        string `json:"spec"`
	Fingerprint string `json:"fingerprint"`
}

func checkReplicaID(op, id string) error {
	if id == "" || len(id) > fleet.MaxReplicaIDBytes {
		return opErr(op, "", fmt.Errorf("%w: replica ID must be 1 to %d bytes", lease.ErrInvalidArgument, fleet.MaxReplicaIDBytes))
	}
	if err := lease.ValidateOwner(id); err != nil {
		return opErr(op, "", fmt.Errorf("replica ID: %w", err))
	}
	return nil
}

func checkEntryTTL(op string, ttl time.Duration) error {
	if err := lease.ValidateTTL(ttl); err != nil {
		return opErr(op, "", fmt.Errorf("entry %w", err))
	}
	return nil
}

// PublishReplica writes r's registry entry, living ttl unless refreshed,
// and returns r's conflicts with the other live replicas. See fleet.Store.
func (s *Store) PublishReplica(ctx context.Context, r fleet.Replica, ttl time.Duration) ([]fleet.Conflict, error) {
	const op = "publish replica"
	if err := checkReplicaID(op, r.ID); err != nil {
		return nil, err
	}
	if err := checkEntryTTL(op, ttl); err != nil {
		return nil, err
	}
	fk := fleetKeysFor(s.prefix)
	resp := registryPublishScript.Exec(ctx, s.client, []string{fk.replicas, fk.entry + r.ID, fk.generation},
		[]string{r.ID, encodeEntry(r), strconv.FormatInt(ttl.Milliseconds(), 10)})
	if err := resp.Error(); err != nil {
		return nil, wrapErr(ctx, op, "", err)
	}
	all, err := s.Replicas(ctx)
	if err != nil {
		return nil, err
	}
	return fleet.Involving(fleet.FindConflicts(all), r.ID), nil
}

// RefreshReplica keeps replica id's entry alive for ttl more. See
// fleet.Store.
func (s *Store) RefreshReplica(ctx context.Context, id string, ttl time.Duration) (int64, bool, error) {
	const op = "refresh replica"
	if err := checkReplicaID(op, id); err != nil {
		return 0, false, err
	}
	if err := checkEntryTTL(op, ttl); err != nil {
		return 0, false, err
	}
	fk := fleetKeysFor(s.prefix)
	resp := registryRefreshScript.Exec(ctx, s.client, []string{fk.replicas, fk.entry + id, fk.generation},
		[]string{id, strconv.FormatInt(ttl.Milliseconds(), 10)})
	if err := resp.Error(); err != nil {
		return 0, false, wrapErr(ctx, op, "", err)
	}
	r, err := intsReply(resp)
	if err != nil || r.n != 2 {
		return 0, false, internalErr(op, "", fmt.Errorf("%w: %v", errBadReply, r.v[:r.n]))
	}
	return r.v[1], r.v[0] == 1, nil
}

// DropReplica removes replica id's entry.
func (s *Store) DropReplica(ctx context.Context, id string) error {
	const op = "drop replica"
	if err := checkReplicaID(op, id); err != nil {
		return err
	}
	fk := fleetKeysFor(s.prefix)
	res := s.client.DoMulti(ctx,
		s.client.B().Zrem().Key(fk.replicas).Member(id).Build(),
		s.client.B().Del().Key(fk.entry+id).Build(),
		s.client.B().Incr().Key(fk.generation).Build())
	for _, r := range res {
		if err := r.Error(); err != nil {
			return wrapErr(ctx, op, "", err)
		}
	}
	return nil
}

// Replicas returns the live replicas' entries, sorted by ID.
func (s *Store) Replicas(ctx context.Context) ([]fleet.Replica, error) {
	const op = "replicas"
	fk := fleetKeysFor(s.prefix)
	res := s.client.DoMulti(ctx,
		s.client.B().Time().Build(),
		s.client.B().Zrange().Key(fk.replicas).Min("0").Max("-1").Withscores().Build())
	now, err := serverTime(res[0])
	if err != nil {
		return nil, wrapErr(ctx, op, "", err)
	}
	scores, err := res[1].AsZScores()
	if err != nil {
		return nil, wrapErr(ctx, op, "", err)
	}
	var ids []string
	expires := map[string]time.Time{}
	for _, z := range scores {
		exp := time.UnixMilli(int64(z.Score))
		if exp.After(now) {
			ids = append(ids, z.Member)
			expires[z.Member] = exp
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = fk.entry + id
	}
	vals, err := s.client.Do(ctx, s.client.B().Mget().Key(keys...).Build()).ToArray()
	if err != nil {
		return nil, wrapErr(ctx, op, "", err)
	}
	var out []fleet.Replica
	for i, v := range vals {
		raw, err := v.ToString()
		if err != nil {
			continue // lapsed between the two reads
		}
		rec, jobs, err := decodeEntry(raw)
		if err != nil {
			return nil, internalErr(op, "", fmt.Errorf("%w: the entry of replica %q is not JSON", lease.ErrInternal, ids[i]))
		}
		r := fleet.Replica{ID: rec.ID, Version: rec.Version, Started: time.UnixMilli(rec.StartedAt),
			Refresh: time.Duration(rec.RefreshMs) * time.Millisecond, Expires: expires[ids[i]],
			ClockOffset: time.Duration(rec.OffsetMs) * time.Millisecond}
		if len(jobs) > 0 {
			r.Jobs = jobs
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b fleet.Replica) int { return cmpString(a.ID, b.ID) })
	return out, nil
}

// Conflicts returns the conflicts among live replicas.
func (s *Store) Conflicts(ctx context.Context) ([]fleet.Conflict, error) {
	all, err := s.Replicas(ctx)
	if err != nil {
		return nil, err
	}
	return fleet.FindConflicts(all), nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
