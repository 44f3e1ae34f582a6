package completion

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/scheduler"
	"github.com/cronguard/cronguard/testutil"
)

// replicas is how many replicas share the jobs in the retry tests.
const replicas = 3

// errUpstream is the failure of the retry tests' jobs.
var errUpstream = errors.New("upstream unavailable")

// retryBackoff is the backoff of the flaky job: 1.5s after the first
// failure, 3s after the second, longer than the second at which replicas
// read the index of open occurrences, so that a retry that ignored it
// would show. Each replica gets its own: a BackOff keeps state.
func retryBackoff() backoff.BackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = 1500 * time.Millisecond
	b.Multiplier = 2
	b.RandomizationFactor = 0
	b.MaxInterval = time.Minute
	b.MaxElapsedTime = 0
	b.Reset() // NewExponentialBackOff started from the default interval
	return b
}

// A nightly job that fails twice and then succeeds, with WithRetry(3, ...),
// on three replicas of one redis-server: three attempts, one success, and
// the effect once. Each attempt starts no earlier than the backoff after
// the end of the one before (the history's times, the store's clock). How
// soon after it (within a read of the index of open occurrences, every
// second) is scheduler's TestScheduler_Completion_RetryFailures's to
// assert, on the bubble's clock; here the gaps are logged.
func TestCompletion_WithRetry_FailsTwiceThenSucceeds(t *testing.T) {
	srv := testutil.StartRedis(t)
	fs := newFleetStore(t, srv)
	_, db := startDatabase(t)
	j := newJournal()
	spec := jobSpec{Name: "flaky", TTL: ttl}
	job := func(ctx context.Context) error {
		if r, _ := scheduler.RunFromContext(ctx); r.Attempt <= 2 {
			return fmt.Errorf("attempt %d: %w", r.Attempt, errUpstream)
		}
		return commitEffect(ctx, db)
	}
	var fleetOf []*scheduler.Scheduler
	for i := range replicas {
		s, _ := startReplica(t, srv, fmt.Sprintf("r%d", i+1), spec, job, j, scheduler.WithRetry(3, retryBackoff()))
		fleetOf = append(fleetOf, s)
	}

	done := j.waitFor(t, "an attempt succeeded", 2*storeWaitBound, event(scheduler.EventSucceeded, ""))
	occ := done.Occurrence
	for _, s := range fleetOf {
		shutdown(t, s)
	}

	assert.Equal(t, 3, done.Attempt, "the third attempt succeeded")
	assert.Equal(t, []int{1, 2, 3}, attemptsStarted(j, occ), "attempts of the occurrence")
	assert.Len(t, j.all(event(scheduler.EventSucceeded, "")), 1, "one success")
	assert.Len(t, j.all(event(scheduler.EventFailed, "").of(occ)), 2, "two failures")
	assert.Empty(t, j.all(event(scheduler.EventGivenUp, "")))
	effects := effectsOf(t, db, occ)
	require.Len(t, effects, 1, "the effect committed once")
	assert.Equal(t, 3, effects[0].Attempt)

	runs := fs.historyOf(t, spec.key(), occ)
	require.Len(t, runs, 3, "history: %v", outcomes(runs))
	want := []string{fleet.OutcomeFailed, fleet.OutcomeFailed, fleet.OutcomeSucceeded}
	b := retryBackoff()
	for k, r := range runs {
		assert.Equal(t, k+1, r.Attempt)
		assert.Equal(t, want[k], r.Outcome, "attempt %d", k+1)
		if k == 0 {
			continue
		}
		wait := b.NextBackOff()
		gap := r.Started.Sub(runs[k-1].Ended)
		t.Logf("attempt %d (on %s) started %s after attempt %d (on %s) ended; backoff %s",
			k+1, r.Replica, gap, k, runs[k-1].Replica, wait)
		assert.GreaterOrEqual(t, gap, wait, "attempt %d waited for the backoff", k+1)
	}
}

// A nightly job that always fails, with WithRetry(3, ...), on three
// replicas: three attempts, and the occurrence reported given up exactly
// once across the fleet, by the replica whose attempt ran out, whatever
// the others read from the index afterwards.
func TestCompletion_WithRetry_GivenUpOnceFleetWide(t *testing.T) {
	srv := testutil.StartRedis(t)
	fs := newFleetStore(t, srv)
	j := newJournal()
	spec := jobSpec{Name: "broken", TTL: ttl}
	job := func(ctx context.Context) error { return errUpstream }
	var fleetOf []*scheduler.Scheduler
	for i := range replicas {
		b := backoff.NewConstantBackOff(300 * time.Millisecond)
		s, _ := startReplica(t, srv, fmt.Sprintf("r%d", i+1), spec, job, j, scheduler.WithRetry(3, b))
		fleetOf = append(fleetOf, s)
	}

	gaveUp := j.waitFor(t, "the occurrence given up", 2*storeWaitBound, event(scheduler.EventGivenUp, ""))
	occ := gaveUp.Occurrence
	// Nothing can offer the occurrence to a replica any more once the
	// index of open occurrences is empty; Shutdown waits for the claims in
	// flight.
	fs.waitUntil(t, "the index of open occurrences is empty", func() bool { return fs.indexSize(t) == 0 })
	for _, s := range fleetOf {
		shutdown(t, s)
	}

	assert.Len(t, j.all(event(scheduler.EventGivenUp, "")), 1, "given up once fleet-wide:\n%s", j)
	assert.Equal(t, 3, gaveUp.Attempt, "after the third attempt")
	var total uint64
	for _, s := range fleetOf {
		total += s.Stats().GivenUp
	}
	assert.Equal(t, uint64(1), total, "Stats.GivenUp summed over the replicas")
	assert.Equal(t, []int{1, 2, 3}, attemptsStarted(j, occ), "attempts of the occurrence")
	assert.Len(t, j.all(event(scheduler.EventFailed, "").of(occ)), 3)
	runs := fs.historyOf(t, spec.key(), occ)
	t.Logf("given up by %s; history of the occurrence: %v", gaveUp.Replica, outcomes(runs))
	assert.Equal(t, 3, count(runs, fleet.OutcomeFailed), "history: %v", outcomes(runs))
}

// count returns how many of runs ended with outcome.
func count(runs []fleet.RunRecord, outcome string) int {
	n := 0
	for _, r := range runs {
		if r.Outcome == outcome {
			n++
		}
	}
	return n
}
