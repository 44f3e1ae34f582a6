package checker

import (
	"fmt"
	"sort"
	"time"

	"github.com/cronguard/cronguard/faults/history"
)

// Tolerance is how long past its ExpiresAt a lease still blocks an acquire
// on the server (lease.ExpiryTolerance).
const Tolerance = 1000 * time.Millisecond

// DefaultSlack is how long after a fault ends its effects may still explain
// a miss (clients reconnect, a restarted replica starts its scheduler).
const DefaultSlack = 1500 * time.Millisecond

// Job describes a job the replicas run.
type Job struct {
	Name  string
	Every time.Duration // the Every schedule's interval
	TTL   time.Duration
	// Completion: an open occurrence of the job is attempted again until
	// it is done or reported given up, which (7) checks.
	Completion bool
	// Window is how long after an occurrence it may still be attempted
	// (its deadline); zero means Every: until the next occurrence.
	Window time.Duration
}

// window is j's Window, or Every when not set.
func (j Job) window() time.Duration {
	if j.Window > 0 {
		return j.Window
	}
	return j.Every
}

// Input is what Check reads.
type Input struct {
	// Events are every replica's and the harness's history events.
	Events []history.Event
	// Writes are the rows of the writes table.
	Writes []history.Write
	// Jobs are the jobs the replicas run.
	Jobs []Job
	// From and To bound the occurrences checked by (4), inclusive. Zero
	// values mean: from one interval (the job's) after the last replica
	// first became ready, to one interval before the first replica began
	// to shut down.
	From, To time.Time
	// Slack: see DefaultSlack. Zero means DefaultSlack.
	Slack time.Duration
}

// Violation is a broken guarantee.
type Violation struct {
	Check      int    // 1 to 7, as in the package documentation
	Job        string // the job (resource)
	Occurrence int64  // Unix ms, when it applies
	Detail     string
}

// String formats the violation for the summary: check, job, occurrence, detail.
func (v Violation) String() string {
	occ := ""
	if v.Occurrence != 0 {
		occ = " occurrence " + time.UnixMilli(v.Occurrence).UTC().Format("15:04:05.000")
	}
	return fmt.Sprintf("(%d) %s%s: %s", v.Check, v.Job, occ, v.Detail)
}

// Miss is an occurrence that did not run, with what explains it.
type Miss struct {
	Job         string
	Occurrence  int64  // Unix ms
	Reason      string // a short class: held, restored, killed_winner, redis_down, in_flight, lost_reply, stall, no_healthy_replica
	Explanation string
}

// Explained is an anomaly that Redis's data loss explains: a duplicate
// start (6) or a lease overlap (3).
type Explained struct {
	Job         string
	Occurrence  int64 // Unix ms: the occurrence started twice, or of the later lease
	Explanation string
}

// Report is the outcome of Check.
type Report struct {
	Violations []Violation
	Misses     []Miss // explained misses

	// DuplicateStarts are the occurrences started by two leases where the
	// server may have lost the first claim with its data (6), one entry
	// per pair of leases.
	DuplicateStarts []Explained
	// LostLeases are the lease overlaps (3) where the server may have lost
	// the earlier lease with its data, one entry per pair of leases.
	LostLeases []Explained
	// Completion are the figures of (7), with its exceptions.
	Completion Completion

	Faults         map[string]int // injected faults by kind
	Stalls         int            // stalls the harness's watchdog recorded
	Runs           int            // run_start events
	Leases         int            // recorded acquires
	Accepted       int            // rows in the writes table
	Rejected       int            // writes refused with fencing.ErrStale
	Duplicates     int            // writes refused with fencing.ErrDuplicate: duplicate effects refused
	WriteErrors    int            // writes that failed otherwise
	Occurrences    int            // occurrences checked by (4)
	CutHolders     int            // runs whose context ended with a lost/unconfirmed lease
	Handovers      int            // lease handovers checked by (5)
	Exempt         int            // handovers exempt from (5): holder paused (or stalled) or killed
	ExemptDataLoss int            // handovers exempt from (5): the server lost the holder's lease with its data
	Undecided      int            // handovers where ctx-done fell between the next acquire's send and reply
}

// Check runs every check and returns the report.
func Check(in Input) Report {
	if in.Slack == 0 {
		in.Slack = DefaultSlack
	}
	ix := index(in.Events, in.Slack)
	r := Report{Faults: map[string]int{}, Accepted: len(in.Writes), Leases: len(ix.acquires)}
	for _, f := range ix.faults {
		if f.kind == history.FaultStall {
			r.Stalls++
			continue
		}
		r.Faults[f.kind]++
	}
	for _, e := range in.Events {
		switch e.Kind {
		case history.RunStart:
			r.Runs++
		case history.WriteRejected:
			if e.Reason == history.RejectDuplicate {
				r.Duplicates++
			} else {
				r.Rejected++
			}
		case history.WriteError:
			r.WriteErrors++
		}
	}
	r.Violations = append(r.Violations, checkFenceOrder(in.Writes)...)
	r.Violations = append(r.Violations, checkOncePerOccurrence(in.Writes)...)
	checkExclusion(ix, &r)
	checkMisses(in, ix, &r)
	checkCancellation(ix, &r)
	checkStarts(ix, &r)
	checkCompletion(in, ix, &r)
	sort.SliceStable(r.Violations, func(i, j int) bool { return r.Violations[i].Check < r.Violations[j].Check })
	return r
}
