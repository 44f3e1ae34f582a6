package fleet

import (
	"time"

	"github.com/cronguard/cronguard/fencing"
)

// History limits.
const (
	// DefaultHistoryLimit is how many runs of each job a store keeps in
	// its history unless configured otherwise
	// (redislease.WithHistoryLimit, memory.WithHistoryLimit).
	DefaultHistoryLimit = 100
	// MaxHistoryLimit bounds a store's history limit.
	MaxHistoryLimit = 10_000
)

// The outcomes of a run, as Status.Outcome and RunRecord.Outcome name
// them (snake_case, the words of the scheduler's glossary).
const (
	// OutcomeSucceeded: the job returned nil.
	OutcomeSucceeded = "succeeded"
	// OutcomeFailed: the job returned an error.
	OutcomeFailed = "failed"
	// OutcomePanicked: the job panicked.
	OutcomePanicked = "panicked"
	// OutcomeTimedOut: the job's timeout passed (scheduler.WithTimeout).
	OutcomeTimedOut = "timed_out"
	// OutcomeInterrupted: the run did not end by itself (shutdown, a lost
	// lease, a dead process); its occurrence stays open for another
	// attempt.
	OutcomeInterrupted = "interrupted"
	// OutcomeGivenUp: the occurrence ran out of attempts or of time and
	// will not be attempted again.
	OutcomeGivenUp = "given_up"
)

// RunRecord is one run of a job in its history: what the replica that ran
// it recorded when it released the lease (the same record as its Status,
// kept among the job's last runs). It carries no lease ID.
type RunRecord struct {
	// Occurrence is the run's occurrence (its trigger's time for a
	// triggered run).
	Occurrence time.Time
	// Attempt is the run's attempt at its occurrence: 1 for the first.
	Attempt int
	// Replica is the instance ID of the replica that ran it
	// (scheduler.WithInstanceID); "" when the replica did not say.
	Replica string
	// Started is when the lease was acquired, in the store's time. For
	// an attempt that no replica recorded (its replica died, or released
	// without a status) and the store recorded "interrupted" when the next
	// attempt took over or the occurrence was given up, and for a
	// "given_up" entry, Started and Ended are when the store did so, and
	// Replica and Fence are empty.
	Started time.Time
	// Ended is when the run ended, approximately: Started plus the run's
	// duration on the replica's clock.
	Ended time.Time
	// Outcome is one of the Outcome constants: "succeeded", "failed",
	// "panicked", "timed_out", "interrupted" or "given_up".
	Outcome string
	// Error is the run's error as Status.Error keeps it (one line,
	// sanitized); empty on success.
	Error string
	// Fence is the run's fencing token.
	Fence fencing.Token
	// Trigger is the ID of the trigger the run consumed, if any.
	Trigger string
	// Missed is how many occurrences before this one ran nowhere, as the
	// ledger reported when this run won (Status.Missed).
	Missed int
}

// Record returns the run st describes as its history keeps it. A Status
// recorded before Status.Attempt existed is attempt 1.
func (st Status) Record() RunRecord {
	attempt := st.Attempt
	if attempt < 1 {
		attempt = 1
	}
	return RunRecord{
		Occurrence: st.Occurrence,
		Attempt:    attempt,
		Replica:    st.Replica,
		Started:    st.Started,
		Ended:      st.Started.Add(st.Duration),
		Outcome:    st.Outcome,
		Error:      st.Error,
		Fence:      st.Fence,
		Trigger:    st.Trigger,
		Missed:     st.Missed,
	}
}
