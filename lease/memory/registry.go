package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// registry is the replicas' entries and the fleet's generation.
type registry struct {
	entries    map[string]*replicaEntry // replica ID -> entry, live or lapsed
	generation int64                    // incremented on every publish and drop
}

// replicaEntry is one replica's entry: live while expires > now.
type replicaEntry struct {
	replica fleet.Replica // as stored: times to the millisecond, Expires unset
	expires time.Time
}

// lapse drops the entries that are no longer live at now.
func (g *registry) lapse(now time.Time) {
	for id, e := range g.entries {
		if !e.expires.After(now) {
			delete(g.entries, id)
		}
	}
}

// live returns the live entries at now, sorted by ID, with Expires set.
func (g *registry) live(now time.Time) []fleet.Replica {
	var out []fleet.Replica
	for _, e := range g.entries {
		if e.expires.After(now) {
			r := e.replica
			r.Jobs = append([]fleet.Job(nil), r.Jobs...)
			r.Expires = e.expires
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b fleet.Replica) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func checkReplicaID(op, id string) error {
	if id == "" || len(id) > fleet.MaxReplicaIDBytes {
		return opError(op, fmt.Errorf("%w: replica ID must be 1 to %d bytes", lease.ErrInvalidArgument, fleet.MaxReplicaIDBytes))
	}
	if err := lease.ValidateOwner(id); err != nil {
		return opError(op, fmt.Errorf("replica ID: %w", err))
	}
	return nil
}

func checkEntryTTL(op string, ttl time.Duration) error {
	if err := lease.ValidateTTL(ttl); err != nil {
		return opError(op, fmt.Errorf("entry %w", err))
	}
	return nil
}

// PublishReplica writes r's registry entry, living ttl unless refreshed,
// and returns r's conflicts with the other live replicas. See fleet.Store.
// r.ID must be 1 to fleet.MaxReplicaIDBytes bytes and pass lease.ValidateOwner;
// ttl must pass lease.ValidateTTL. The entry keeps r as lease/redislease does:
// Started and Refresh to the millisecond, r.Expires ignored. Every publish
// changes the generation, and drops the entries that lapsed.
func (s *Store) PublishReplica(ctx context.Context, r fleet.Replica, ttl time.Duration) ([]fleet.Conflict, error) {
	const op = "publish replica"
	if err := checkReplicaID(op, r.ID); err != nil {
		return nil, err
	}
	if err := checkEntryTTL(op, ttl); err != nil {
		return nil, err
	}
	if err := ctxError(ctx); err != nil {
		return nil, opError(op, err)
	}
	stored := fleet.Replica{
		ID:      r.ID,
		Version: r.Version,
		Started: time.UnixMilli(r.Started.UnixMilli()),
		Refresh: r.Refresh.Truncate(time.Millisecond),
		Jobs:    append([]fleet.Job(nil), r.Jobs...), // nil when empty, as lease/redislease reads it

		ClockOffset: r.ClockOffset.Truncate(time.Millisecond),
		ReadsIndex:  r.ReadsIndex,
	}

	s.mu.Lock()
	now := s.now()
	s.registry.lapse(now)
	s.registry.entries[r.ID] = &replicaEntry{replica: stored, expires: now.Add(ttl)}
	s.registry.generation++
	all := s.registry.live(now)
	s.mu.Unlock()

	return fleet.Involving(fleet.FindConflicts(all), r.ID), nil
}

// RefreshReplica keeps replica id's entry alive for ttl more, and returns
// the fleet's generation and whether the entry was still live (false: it
// lapsed or was dropped, and must be published again). See fleet.Store.
// It does a constant amount of work.
func (s *Store) RefreshReplica(ctx context.Context, id string, ttl time.Duration) (int64, bool, error) {
	const op = "refresh replica"
	if err := checkReplicaID(op, id); err != nil {
		return 0, false, err
	}
	if err := checkEntryTTL(op, ttl); err != nil {
		return 0, false, err
	}
	if err := ctxError(ctx); err != nil {
		return 0, false, opError(op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	e := s.registry.entries[id]
	if e == nil || !e.expires.After(now) {
		delete(s.registry.entries, id)
		return s.registry.generation, false, nil
	}
	e.expires = now.Add(ttl)
	return s.registry.generation, true, nil
}

// DropReplica removes replica id's entry and changes the generation, as
// lease/redislease does whether or not there was an entry.
func (s *Store) DropReplica(ctx context.Context, id string) error {
	const op = "drop replica"
	if err := checkReplicaID(op, id); err != nil {
		return err
	}
	if err := ctxError(ctx); err != nil {
		return opError(op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.registry.entries, id)
	s.registry.generation++
	return nil
}

// Replicas returns the live replicas' entries, sorted by ID, each with its
// Expires in the store's time.
func (s *Store) Replicas(ctx context.Context) ([]fleet.Replica, error) {
	const op = "replicas"
	if err := ctxError(ctx); err != nil {
		return nil, opError(op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.registry.live(s.now()), nil
}

// Conflicts returns the conflicts among live replicas: per job name, in
// name order, the first pair of replicas (in ID order) that registered it
// with different fingerprints.
func (s *Store) Conflicts(ctx context.Context) ([]fleet.Conflict, error) {
	all, err := s.Replicas(ctx)
	if err != nil {
		return nil, err
	}
	return fleet.FindConflicts(all), nil
}
