package scheduler

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
)

// acquireLog records when each Acquire was sent, on the bubble's clock,
// and what it answered.
type acquireLog struct {
	lease.Store
	mu   sync.Mutex
	sent []time.Time
	errs []error
}

func (a *acquireLog) Acquire(ctx context.Context, key string, ttl time.Duration, opts ...lease.AcquireOption) (*lease.Lease, error) {
	now := time.Now()
	l, err := a.Store.Acquire(ctx, key, ttl, opts...)
	a.mu.Lock()
	a.sent, a.errs = append(a.sent, now), append(a.errs, err)
	a.mu.Unlock()
	return l, err
}

func (a *acquireLog) calls() ([]int64, []error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return unixMillis(a.sent), append([]error(nil), a.errs...)
}

// callTimes records when a job was called and for which occurrence.
type callTimes struct {
	mu     sync.Mutex
	called []time.Time
	occ    []time.Time
}

func (c *callTimes) record(ctx context.Context) error {
	r, _ := RunFromContext(ctx)
	c.mu.Lock()
	c.called, c.occ = append(c.called, time.Now()), append(c.occ, r.Occurrence)
	c.mu.Unlock()
	return nil
}

func (c *callTimes) get() (called, occ []int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return unixMillis(c.called), unixMillis(c.occ)
}

func unixMillis(ts []time.Time) []int64 {
	ms := make([]int64, len(ts))
	for i, t := range ts {
		ms[i] = t.UnixMilli()
	}
	return ms
}

// lead is the claim lead of the tests below: the most Every(time.Second)
// allows.
const lead = 250 * time.Millisecond

// With WithClaimLead, a scheduled occurrence is claimed the lead ahead of
// it, and its job is called when it is due, not when the claim was
// answered.
func TestScheduler_ClaimAhead_ClaimsAheadAndCallsAtTheOccurrence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &acquireLog{Store: newMemoryStore(t, nil)}
		base := time.Now() // a whole second
		var calls callTimes
		s := newScheduler(t, store, WithClaimLead(lead))
		require.NoError(t, s.Register("ahead", Every(time.Second), calls.record))
		require.NoError(t, s.Start())
		time.Sleep(3*time.Second + 500*time.Millisecond)
		synctest.Wait()
		shutdown(t, s)

		sent, errs := store.calls()
		called, occ := calls.get()
		require.Len(t, sent, 3)
		require.Len(t, called, 3)
		for k := range 3 {
			due := base.Add(time.Duration(k+1) * time.Second)
			require.NoError(t, errs[k])
			assert.Equal(t, due.Add(-lead).UnixMilli(), sent[k], "occurrence %d was claimed the lead ahead", k+1)
			assert.Equal(t, due.UnixMilli(), occ[k], "run %d is its own occurrence's", k+1)
			assert.Equal(t, due.UnixMilli(), called[k], "the job was called when occurrence %d came due", k+1)
		}
	})
}

// Without WithClaimLead (and with WithClaimLead(0)), an occurrence is
// claimed at the occurrence.
func TestScheduler_ClaimAhead_OffByDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &acquireLog{Store: newMemoryStore(t, nil)}
		base := time.Now()
		time.Sleep(500 * time.Millisecond)
		var calls callTimes
		s := newScheduler(t, store)
		require.NoError(t, s.Register("at-once", Every(time.Second), calls.record))
		require.NoError(t, s.Start())
		time.Sleep(2 * time.Second)
		synctest.Wait()
		shutdown(t, s)

		sent, _ := store.calls()
		called, _ := calls.get()
		require.Equal(t, unixMillis([]time.Time{base.Add(time.Second), base.Add(2 * time.Second)}), sent)
		require.Equal(t, sent, called)
	})
}

// The lead of a schedule is at most half the skew its rounds allow: the
// store refuses a round further ahead of its clock than the skew, and the
// other half is left for the replicas' clock offsets.
func TestScheduler_ClaimAhead_LeadIsHalfTheSkewAtMost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &acquireLog{Store: newMemoryStore(t, nil)}
		base := time.Now()
		s := newScheduler(t, store, WithClaimLead(MaxClaimLead))
		var calls callTimes
		require.NoError(t, s.Register("tight", Every(200*time.Millisecond), calls.record))
		require.NoError(t, s.Start())
		time.Sleep(450 * time.Millisecond)
		synctest.Wait()
		shutdown(t, s)

		sent, errs := store.calls()
		require.Len(t, sent, 2)
		for k, at := range sent {
			due := base.Add(time.Duration(k+1) * 200 * time.Millisecond)
			require.NoError(t, errs[k])
			assert.Equal(t, due.Add(-50*time.Millisecond).UnixMilli(), at, "a lead of half of half the gap")
		}
	})
}

// A claim ahead that finds the job's lease held (its run elsewhere ends
// just before the occurrence) is sent again at the occurrence, and wins:
// no skip, no lateness.
func TestScheduler_ClaimAhead_HeldLeaseIsClaimedAgainAtTheOccurrence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMemoryStore(t, nil)
		store := &acquireLog{Store: mem}
		base := time.Now()
		var ev events
		var calls callTimes
		s := newScheduler(t, store, WithObserver(ev.observe), WithClaimLead(lead))
		require.NoError(t, s.Register("held", Every(time.Second), calls.record))
		// Another holder has the job's lease until 100 ms before the
		// first occurrence.
		other, err := mem.Acquire(t.Context(), JobKeyPrefix+"held", 5*time.Second)
		require.NoError(t, err)
		require.NoError(t, s.Start())
		time.Sleep(900 * time.Millisecond)
		require.NoError(t, other.Release(t.Context()))
		time.Sleep(500 * time.Millisecond)
		synctest.Wait()
		shutdown(t, s)

		due := base.Add(time.Second)
		sent, errs := store.calls()
		require.Len(t, sent, 2)
		assert.Equal(t, due.Add(-lead).UnixMilli(), sent[0])
		assert.True(t, errors.Is(errs[0], lease.ErrLocked), "the claim ahead found the lease held: %v", errs[0])
		assert.Equal(t, due.UnixMilli(), sent[1], "claimed again at the occurrence")
		require.NoError(t, errs[1])
		called, occ := calls.get()
		assert.Equal(t, []int64{due.UnixMilli()}, called)
		assert.Equal(t, []int64{due.UnixMilli()}, occ)
		assert.Empty(t, ev.of(EventSkipped), "nothing skipped")
	})
}

// A firing ahead that finds the job's earlier run still going here looks
// again at the occurrence: the run ends before it, and the occurrence runs
// here on time.
func TestScheduler_ClaimAhead_RunHereEndingBeforeTheOccurrence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &acquireLog{Store: newMemoryStore(t, nil)}
		base := time.Now()
		var ev events
		var calls callTimes
		s := newScheduler(t, store, WithObserver(ev.observe), WithClaimLead(lead))
		require.NoError(t, s.Register("long", Every(time.Second), func(ctx context.Context) error {
			_ = calls.record(ctx)
			time.Sleep(900 * time.Millisecond) // ends 100 ms before the next occurrence
			return nil
		}))
		require.NoError(t, s.Start())
		time.Sleep(2*time.Second + 500*time.Millisecond)
		synctest.Wait()
		shutdown(t, s)

		called, _ := calls.get()
		assert.Equal(t, unixMillis([]time.Time{base.Add(time.Second), base.Add(2 * time.Second)}), called)
		assert.Empty(t, ev.of(EventSkipped), "nothing skipped")
	})
}

// Shutdown before an occurrence claimed ahead is due: the job is not
// called, the lease is released, and the occurrence is reported skipped
// for the shutdown.
func TestScheduler_ClaimAhead_ShutdownBeforeTheOccurrence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newMemoryStore(t, nil)
		store := &acquireLog{Store: mem}
		var ev events
		var calls callTimes
		s := newScheduler(t, store, WithObserver(ev.observe), WithClaimLead(lead))
		require.NoError(t, s.Register("stopping", Every(time.Second), calls.record))
		require.NoError(t, s.Start())
		time.Sleep(900 * time.Millisecond) // claimed at 750 ms, due at 1 s
		synctest.Wait()
		sent, _ := store.calls()
		require.Len(t, sent, 1, "claimed ahead")
		shutdown(t, s)

		called, _ := calls.get()
		assert.Empty(t, called, "the job was not called")
		skips := ev.of(EventSkipped)
		require.Len(t, skips, 1)
		assert.Equal(t, SkipShutdown, skips[0].Reason)
		held, err := mem.IsLocked(t.Context(), JobKeyPrefix+"stopping")
		require.NoError(t, err)
		assert.False(t, held, "the lease was released")
	})
}

func TestWithClaimLead_Validates(t *testing.T) {
	for _, d := range []time.Duration{-time.Millisecond, MaxClaimLead + time.Millisecond} {
		_, err := New(newMemoryStore(t, nil), WithClaimLead(d))
		require.ErrorIs(t, err, ErrInvalidArgument)
		assert.ErrorContains(t, err, "WithClaimLead: lead must be between 0 and 1s")
	}
}

// A cron schedule fires its group lead before each occurrence, across a
// change of the expression's gap.
func TestCronSpec_NextFiresLeadAhead(t *testing.T) {
	p, err := Cron("0,30 * * * * *").compile(time.UTC, time.Now())
	require.NoError(t, err)
	cp := p.(*cronPlan)
	spec := cronSpec{expr: cp.expr, lead: 250 * time.Millisecond}
	at := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	next := spec.Next(at.Add(-250 * time.Millisecond))
	assert.Equal(t, at.Add(30*time.Second-250*time.Millisecond), next)
	assert.Equal(t, at.Add(time.Minute-250*time.Millisecond), spec.Next(next))
}

// An occurrence claimed ahead by a replica that shuts down before it is
// due is an attempt interrupted before it began: with attempts (the
// default), the replica releases it open and announces it, and a replica
// that has the job resumes it within a second, not after the lease's TTL
// as after a crash.
func TestScheduler_ClaimAhead_ShutdownBeforeTheOccurrenceIsResumedElsewhere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newMemoryStore(t, nil)
		base := time.Now()
		time.Sleep(500 * time.Millisecond)
		var calls callTimes
		var ev events
		a := newScheduler(t, store, WithInstanceID("a"), WithObserver(ev.observe), WithClaimLead(lead))
		b := newScheduler(t, store, WithInstanceID("b"), WithClaimLead(lead))
		for _, s := range []*Scheduler{a, b} {
			require.NoError(t, s.Register("resumed", Every(10*time.Second), calls.record, WithTTL(5*time.Second)))
		}
		require.NoError(t, a.Start())
		time.Sleep(9*time.Second + 350*time.Millisecond) // 9.85 s: claimed ahead, due at 10 s
		shutdown(t, a)
		skips := ev.of(EventSkipped)
		require.Len(t, skips, 1)
		require.Equal(t, SkipShutdown, skips[0].Reason)
		called, _ := calls.get()
		require.Empty(t, called, "a did not call the job")
		require.NoError(t, b.Start())
		time.Sleep(8 * time.Second)
		synctest.Wait()
		shutdown(t, b)
		called, occ := calls.get()
		require.Equal(t, []int64{base.Add(10 * time.Second).UnixMilli()}, occ, "the occurrence ran on b")
		assert.Less(t, called[0], base.Add(11500*time.Millisecond).UnixMilli(), "resumed within a second or so of a's shutdown, not after the TTL")
	})
}

// A cron schedule started (or registered) less than a second before its
// first firing, in the same wall-clock second, still fires it. gocron
// takes a first run time within the same second as the time it computes
// it from for the second instance of a wall time repeated by a
// daylight-saving fall-back, and skips to the run after it: with a lead,
// a firing is not on a whole second, so a replica that started at
// 11:59:59.100 with a lead of 250ms lost the 12:00 occurrence, and
// nothing reported it (the simulator's seed 7823 of the long mode from
// 7443).
func TestScheduler_ClaimAhead_CronStartedInTheSecondOfItsFirstFiring(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after bool // registered after Start, else before it
	}{{"registered before Start", false}, {"registered after Start", true}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := newMemoryStore(t, nil)
				var calls callTimes
				base := time.Now().Truncate(time.Minute) // the bubble starts at a whole minute
				first := base.Add(time.Minute)
				time.Sleep(time.Until(first.Add(-900 * time.Millisecond))) // 650ms before the firing, in its second
				s := newScheduler(t, store, WithClaimLead(lead))
				register := func() { require.NoError(t, s.Register("minutely", Cron("* * * * *"), calls.record)) }
				if !tc.after {
					register()
				}
				require.NoError(t, s.Start())
				if tc.after {
					register()
				}
				time.Sleep(time.Until(first.Add(time.Minute + time.Second)))
				synctest.Wait()
				shutdown(t, s)

				_, occ := calls.get()
				assert.Equal(t, unixMillis([]time.Time{first, first.Add(time.Minute)}), occ, "the first two occurrences, each once")
			})
		})
	}
}

// A job scheduled within the lead before an occurrence still runs it: its
// firing time (the lead before it) has passed, so gocron fires the job's
// group first for the occurrence after, and a group that has other jobs
// already fired for it without this one. Without a lead the job would
// have been fired at the occurrence; it is, at the occurrence, for an
// Every and a cron schedule, scheduled by Start or registered after it,
// alone or beside a job of the same schedule.
func TestScheduler_ClaimAhead_ScheduledWithinTheLeadRunsTheOccurrence(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sch    Schedule
		after  bool // registered after Start, else before it
		beside bool // beside a job of the same schedule registered before Start
	}{
		{"every, before Start", Every(30 * time.Second), false, false},
		{"every, after Start, a group of its own", Every(30 * time.Second), true, false},
		{"every, after Start, into a group", Every(30 * time.Second), true, true},
		{"cron, before Start", Cron("* * * * *"), false, false},
		{"cron, after Start, into a group", Cron("* * * * *"), true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := newMemoryStore(t, nil)
				var calls, other callTimes
				first := time.Now().Truncate(time.Minute).Add(time.Minute) // an occurrence of both schedules
				s := newScheduler(t, store, WithClaimLead(100*time.Millisecond))
				if tc.beside {
					require.NoError(t, s.Register("other", tc.sch, other.record))
				}
				register := func() { require.NoError(t, s.Register("late", tc.sch, calls.record)) }
				if tc.after {
					require.NoError(t, s.Start())
					time.Sleep(time.Until(first) - 42*time.Millisecond) // within the lead
					register()
				} else {
					time.Sleep(time.Until(first) - 42*time.Millisecond)
					register()
					require.NoError(t, s.Start())
				}
				time.Sleep(time.Until(first.Add(time.Second)))
				synctest.Wait()
				shutdown(t, s)

				started, occ := calls.get()
				require.Equal(t, unixMillis([]time.Time{first}), occ, "the occurrence within the lead ran, once")
				assert.GreaterOrEqual(t, started[0], first.UnixMilli(), "the job is called at its occurrence, not before it")
			})
		})
	}
}
