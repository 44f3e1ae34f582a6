package faults

import (
	"time"

	"github.com/cronguard/cronguard/faults/checker"
)

// JobSpec is one job every replica registers, and what the checker needs
// to know of it.
type JobSpec struct {
	Name       string
	Every, TTL time.Duration
	// Short and Long are ranges of run lengths; a run is long with
	// probability LongP. Long runs outlast the interval (later occurrences
	// are skipped while the lease is held) and the TTL (the heartbeat must
	// renew).
	Short, Long [2]time.Duration
	LongP       float64
	// Stubborn jobs ignore their context's cancellation: they finish their
	// work, keep going for a time drawn from StubbornFor, and then write
	// with a context that is not the run's: a stale writer that fencing
	// must reject.
	Stubborn    bool
	StubbornFor [2]time.Duration

	// Completion: the scheduler attempts an open occurrence of the job
	// again (its attempt window, the interval, is longer than the TTL plus
	// lease.ExpiryTolerance plus 2s), which the checker's (7) checks. It
	// must say what the scheduler does with the job: shorter windows get
	// one attempt.
	Completion bool
	// FailP is the probability that a run fails: it returns an error
	// before its write (nothing committed). FailAfterWriteP is the
	// probability that it fails after its write committed (its effect is
	// made; the next attempt's write is refused as a duplicate).
	FailP, FailAfterWriteP float64
	// Retry, when at least 2, retries failed attempts (scheduler.WithRetry)
	// up to Retry attempts in total, RetryAfter apart.
	Retry      int
	RetryAfter time.Duration
}

// Jobs are the jobs of every replica.
var Jobs = []JobSpec{
	{Name: "ticker", Every: 500 * time.Millisecond, TTL: 1500 * time.Millisecond,
		Short: [2]time.Duration{20 * time.Millisecond, 200 * time.Millisecond},
		Long:  [2]time.Duration{800 * time.Millisecond, 2500 * time.Millisecond}, LongP: 0.1},
	{Name: "ledger", Every: time.Second, TTL: 2 * time.Second,
		Short: [2]time.Duration{50 * time.Millisecond, 400 * time.Millisecond},
		Long:  [2]time.Duration{1500 * time.Millisecond, 4 * time.Second}, LongP: 0.15},
	{Name: "stubborn", Every: time.Second, TTL: time.Second,
		Short: [2]time.Duration{50 * time.Millisecond, 300 * time.Millisecond},
		Long:  [2]time.Duration{time.Second, 3 * time.Second}, LongP: 0.6,
		Stubborn: true, StubbornFor: [2]time.Duration{200 * time.Millisecond, 1500 * time.Millisecond}},
	// Its occurrences outlive a fault: interrupted attempts (a kill, a
	// stop, a cut, Shutdown) are resumed, failures retried, until the next
	// occurrence.
	{Name: "nightly", Every: 10 * time.Second, TTL: 2 * time.Second,
		Short:      [2]time.Duration{500 * time.Millisecond, 4 * time.Second},
		Completion: true, FailP: 0.2, FailAfterWriteP: 0.05, Retry: 3, RetryAfter: 200 * time.Millisecond},
}

// CheckerJobs returns Jobs as the checker describes them.
func CheckerJobs() []checker.Job {
	out := make([]checker.Job, len(Jobs))
	for i, j := range Jobs {
		out[i] = checker.Job{Name: j.Name, Every: j.Every, TTL: j.TTL, Completion: j.Completion}
	}
	return out
}

// MaxTTL is the longest TTL of Jobs.
func MaxTTL() time.Duration {
	var m time.Duration
	for _, j := range Jobs {
		m = max(m, j.TTL)
	}
	return m
}
