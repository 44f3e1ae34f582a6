package memory_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

func replicaWith(id string, jobs ...fleet.Job) fleet.Replica {
	return fleet.Replica{ID: id, Version: "v1", Refresh: time.Second, Jobs: jobs}
}

func jobWith(name, fingerprint string) fleet.Job {
	return fleet.Job{Name: name, Key: "job:" + name, Schedule: "every(1s)", Fingerprint: fingerprint}
}

// TestStore_RefreshReplica_Generation checks that every publish and every
// drop changes the generation, and a refresh does not.
func TestStore_RefreshReplica_Generation(t *testing.T) {
	ctx := t.Context()
	s, _ := newStore(t)
	gen := func() int64 {
		t.Helper()
		g, _, err := s.RefreshReplica(ctx, "r1", time.Minute)
		require.NoError(t, err)
		return g
	}
	g0 := gen()
	_, err := s.PublishReplica(ctx, replicaWith("r1", jobWith("a", "x")), time.Minute)
	require.NoError(t, err)
	g1 := gen()
	assert.NotEqual(t, g0, g1, "publish")
	_, err = s.PublishReplica(ctx, replicaWith("r1", jobWith("a", "x")), time.Minute)
	require.NoError(t, err)
	g2 := gen()
	assert.NotEqual(t, g1, g2, "a publish of the same jobs")
	assert.Equal(t, g2, gen(), "refresh")
	require.NoError(t, s.DropReplica(ctx, "never-published"))
	assert.NotEqual(t, g2, gen(), "a drop, even of no entry (as on Redis)")
}

// TestStore_RefreshReplica_LapseBoundary pins when an entry lapses: live
// while Expires > now, and a refresh extends it from now.
func TestStore_RefreshReplica_LapseBoundary(t *testing.T) {
	ctx := t.Context()
	s, clock := newStore(t)
	_, err := s.PublishReplica(ctx, replicaWith("r1"), time.Second)
	require.NoError(t, err)
	all, err := s.Replicas(ctx)
	require.NoError(t, err)
	require.Len(t, all, 1)
	assert.True(t, all[0].Expires.Equal(clock.Now().Add(time.Second)))

	clock.Advance(time.Second - time.Millisecond)
	_, found, err := s.RefreshReplica(ctx, "r1", time.Second)
	require.NoError(t, err)
	require.True(t, found, "1ms before expiry")
	clock.Advance(time.Second - time.Millisecond)
	all, err = s.Replicas(ctx)
	require.NoError(t, err)
	assert.Len(t, all, 1, "the refresh counted from its own time")
	clock.Advance(time.Millisecond)
	all, err = s.Replicas(ctx)
	require.NoError(t, err)
	assert.Empty(t, all, "at Expires the entry has lapsed")
	_, found, err = s.RefreshReplica(ctx, "r1", time.Second)
	require.NoError(t, err)
	assert.False(t, found)
}

// TestStore_Replicas_Copies checks that the store keeps its own copy of an
// entry: what the caller does with the slices it gave or got changes
// nothing, and Expires given on publish is ignored.
func TestStore_Replicas_Copies(t *testing.T) {
	ctx := t.Context()
	s, clock := newStore(t)
	jobs := []fleet.Job{jobWith("a", "x")}
	r := replicaWith("r1", jobs...)
	r.Jobs = jobs
	r.Started = time.Date(2025, 1, 1, 0, 0, 0, 1_500_000, time.UTC)
	r.Expires = time.Unix(1, 0)
	_, err := s.PublishReplica(ctx, r, time.Minute)
	require.NoError(t, err)
	jobs[0].Fingerprint = "changed"

	all, err := s.Replicas(ctx)
	require.NoError(t, err)
	require.Len(t, all, 1)
	assert.Equal(t, "x", all[0].Jobs[0].Fingerprint)
	assert.True(t, all[0].Started.Equal(time.Date(2025, 1, 1, 0, 0, 0, 1_000_000, time.UTC)), "kept to the millisecond")
	assert.True(t, all[0].Expires.Equal(clock.Now().Add(time.Minute)))
	all[0].Jobs[0].Fingerprint = "changed"
	again, err := s.Replicas(ctx)
	require.NoError(t, err)
	assert.Equal(t, "x", again[0].Jobs[0].Fingerprint)

	_, err = s.PublishReplica(ctx, fleet.Replica{ID: "r0", Jobs: []fleet.Job{}}, time.Minute)
	require.NoError(t, err)
	all, err = s.Replicas(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"r0", "r1"}, []string{all[0].ID, all[1].ID}, "sorted by ID")
	assert.Nil(t, all[0].Jobs, "no jobs read back as nil, as on Redis")
}

// TestStore_Conflicts_FirstPairInIDOrder pins the conflict rule: per job
// name, the first registration (in replica ID order) against the first
// one after it with another fingerprint; PublishReplica reports only the
// conflicts its replica is part of.
func TestStore_Conflicts_FirstPairInIDOrder(t *testing.T) {
	ctx := t.Context()
	s, _ := newStore(t)
	publish := func(r fleet.Replica) []fleet.Conflict {
		t.Helper()
		c, err := s.PublishReplica(ctx, r, time.Minute)
		require.NoError(t, err)
		return c
	}
	assert.Empty(t, publish(replicaWith("r1", jobWith("report", "daily"), jobWith("z", "1"))))
	mine := publish(replicaWith("r2", jobWith("report", "hourly"), jobWith("z", "2")))
	require.Len(t, mine, 2)
	assert.Equal(t, fleet.Conflict{Job: "report", Key: "job:report", Replicas: [2]string{"r1", "r2"},
		Jobs: [2]fleet.Job{jobWith("report", "daily"), jobWith("report", "hourly")}}, mine[0])
	assert.Equal(t, "z", mine[1].Job, "by job name")

	mine = publish(replicaWith("r3", jobWith("report", "daily")))
	assert.Empty(t, mine, "r3 agrees with r1: the pair stays r1 and r2, r3 is in none")
	all, err := s.Conflicts(ctx)
	require.NoError(t, err)
	require.Len(t, all, 2)
	assert.Equal(t, [2]string{"r1", "r2"}, all[0].Replicas)
	assert.Equal(t, [2]string{"r1", "r2"}, all[1].Replicas)

	require.NoError(t, s.DropReplica(ctx, "r1"))
	all, err = s.Conflicts(ctx)
	require.NoError(t, err)
	require.Len(t, all, 1, "z has one registration left")
	assert.Equal(t, "report", all[0].Job)
	assert.Equal(t, [2]string{"r2", "r3"}, all[0].Replicas, "the next pair in ID order")
}

func TestStore_PublishReplica_Validation(t *testing.T) {
	ctx := t.Context()
	s, _ := newStore(t)
	for name, tc := range map[string]struct {
		id   string
		ttl  time.Duration
		rule string
	}{
		"empty ID":        {"", time.Second, "replica ID must be 1 to"},
		"long ID":         {strings.Repeat("r", fleet.MaxReplicaIDBytes+1), time.Second, "replica ID must be 1 to"},
		"control in ID":   {"r\n1", time.Second, "control characters"},
		"zero ttl":        {"r1", 0, "entry lease: invalid argument: ttl must be positive"},
		"fractional ttl":  {"r1", 1500 * time.Microsecond, "whole number of milliseconds"},
		"longest ID okay": {strings.Repeat("r", fleet.MaxReplicaIDBytes), time.Second, ""},
	} {
		_, err := s.PublishReplica(ctx, fleet.Replica{ID: tc.id}, tc.ttl)
		_, _, errRefresh := s.RefreshReplica(ctx, tc.id, tc.ttl)
		if tc.rule == "" {
			require.NoError(t, err, name)
			require.NoError(t, errRefresh, name)
			continue
		}
		for _, err := range []error{err, errRefresh} {
			require.ErrorIs(t, err, lease.ErrInvalidArgument, name)
			assert.Contains(t, err.Error(), tc.rule, name)
		}
	}
	require.ErrorIs(t, s.DropReplica(ctx, ""), lease.ErrInvalidArgument)
	all, err := s.Replicas(ctx)
	require.NoError(t, err)
	assert.Len(t, all, 1, "only the valid entry was written")
}
