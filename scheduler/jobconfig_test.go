package scheduler

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// registrationOf returns the registration of the job registered as name.
func registrationOf(t *testing.T, s *Scheduler, name string) (*job, *registration) {
	t.Helper()
	s.mu.Lock()
	j := s.jobs[JobKeyPrefix+name]
	s.mu.Unlock()
	require.NotNil(t, j, "job %q", name)
	reg := j.registered()
	require.NotNil(t, reg, "job %q", name)
	return j, reg
}

// TestScheduler_Register_EqualOptionsAreKeptOnce: jobs registered with
// equal options share one jobConfig, a job with other options has its
// own, and each keeps the options it was given.
func TestScheduler_Register_EqualOptionsAreKeptOnce(t *testing.T) {
	s := newScheduler(t, newMemoryStore(t, nil), WithInstanceID("r1"))
	nop := func(context.Context) error { return nil }
	require.NoError(t, s.Register("a", Every(time.Second), nop, WithTTL(10*time.Second)))
	require.NoError(t, s.Register("b", Every(time.Minute), nop, WithTTL(10*time.Second)))
	require.NoError(t, s.Register("c", Every(time.Second), nop, WithTTL(20*time.Second)))
	require.NoError(t, s.Register("d", Every(time.Second), nop, WithTTL(10*time.Second), WithOwner("billing")))

	_, a := registrationOf(t, s, "a")
	_, b := registrationOf(t, s, "b")
	_, c := registrationOf(t, s, "c")
	_, d := registrationOf(t, s, "d")
	assert.Same(t, a.jobConfig, b.jobConfig, "equal options, one config")
	assert.NotSame(t, a.jobConfig, c.jobConfig)
	assert.NotSame(t, a.jobConfig, d.jobConfig)
	assert.Equal(t, 10*time.Second, a.ttl)
	assert.Equal(t, 20*time.Second, c.ttl)
	assert.Equal(t, "billing", d.owner)
}

// TestScheduler_Register_OptionsKeptOnceUpToACap: past maxSharedConfigs
// distinct options, a job keeps its own, with the options it was given.
func TestScheduler_Register_OptionsKeptOnceUpToACap(t *testing.T) {
	s := newScheduler(t, newMemoryStore(t, nil))
	nop := func(context.Context) error { return nil }
	n := maxSharedConfigs + 10
	for i := range n {
		require.NoError(t, s.Register(fmt.Sprintf("j%d", i), Every(time.Hour), nop, WithTTL(MinTTL+time.Duration(i)*time.Millisecond)))
	}
	s.mu.Lock()
	kept := len(s.configs)
	s.mu.Unlock()
	assert.Equal(t, maxSharedConfigs, kept)
	for _, i := range []int{0, maxSharedConfigs - 1, maxSharedConfigs, n - 1} {
		_, reg := registrationOf(t, s, fmt.Sprintf("j%d", i))
		assert.Equal(t, MinTTL+time.Duration(i)*time.Millisecond, reg.ttl, "job j%d", i)
	}
}

// TestScheduler_Run_OwnerIsTheReplicaAndTheJobByDefault: a run's lease
// is held by "<instance ID>/<name>" unless WithOwner names another owner.
func TestScheduler_Run_OwnerIsTheReplicaAndTheJobByDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScheduler(t, newMemoryStore(t, nil), WithInstanceID("replica-7"))
		owners := make(chan string, 2)
		record := func(ctx context.Context) error {
			r, _ := RunFromContext(ctx)
			owners <- r.Job + "=" + r.Owner
			return nil
		}
		require.NoError(t, s.Register("plain", Every(time.Hour), record))
		require.NoError(t, s.Register("named", Every(time.Hour), record, WithOwner("billing")))
		require.NoError(t, s.Start())
		got := []string{<-owners, <-owners} // at the next hour, on the bubble's clock
		assert.ElementsMatch(t, []string{"plain=replica-7/plain", "named=billing"}, got)
		shutdown(t, s)
	})
}

// TestScheduler_Run_OwnerFollowsTheNameRegisteredAgain: a job removed
// while its run goes, and registered again under another spelling of its
// name (the same NFC form, so the same job), takes its default owner from
// the name it was registered with again.
func TestScheduler_Run_OwnerFollowsTheNameRegisteredAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScheduler(t, newMemoryStore(t, nil), WithInstanceID("r"))
		owners := make(chan string, 4)
		release := make(chan struct{})
		first := func(ctx context.Context) error {
			r, _ := RunFromContext(ctx)
			owners <- r.Owner
			<-release
			return nil
		}
		second := func(ctx context.Context) error {
			r, _ := RunFromContext(ctx)
			owners <- r.Owner
			return nil
		}
		decomposed, composed := "Cafe\u0301", "Caf\u00e9"
		require.NoError(t, s.Register(decomposed, Every(time.Hour), first))
		require.NoError(t, s.Start())
		assert.Equal(t, "r/"+decomposed, <-owners)
		require.NoError(t, s.Remove(decomposed)) // its run goes on
		require.NoError(t, s.Register(composed, Every(time.Hour), second))
		close(release)
		assert.Equal(t, "r/"+composed, <-owners, "the next run, an hour later")
		shutdown(t, s)
	})
}

// TestScheduler_Register_OptionsWithPointersAreNotKept: options that
// hold a pointer (WithRetry, WithConcurrencyLimit) are new at each
// Register and never shared, so the Scheduler does not keep them.
func TestScheduler_Register_OptionsWithPointersAreNotKept(t *testing.T) {
	s := newScheduler(t, newMemoryStore(t, nil))
	nop := func(context.Context) error { return nil }
	for i := range 3 {
		require.NoError(t, s.Register(fmt.Sprintf("retried%d", i), Every(time.Hour), nop, WithRetry(3, backoff.NewConstantBackOff(time.Second))))
		require.NoError(t, s.Register(fmt.Sprintf("limited%d", i), Every(time.Hour), nop, WithConcurrencyLimit("l", 2)))
	}
	s.mu.Lock()
	kept := len(s.configs)
	s.mu.Unlock()
	assert.Zero(t, kept)
	_, reg := registrationOf(t, s, "retried2")
	assert.NotNil(t, reg.retry)
	_, reg = registrationOf(t, s, "limited1")
	assert.NotNil(t, reg.limitSpec)
}
