package console

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/inspect"
)

// The job page's run history: historyPage runs a page, newest first, and
// a tally of the outcomes and missed occurrences among the newest
// historyTally runs (the jobs page tallies as many).
const (
	historyPage  = 20
	historyTally = 100
)

// historyView is the run history a job page shows.
type historyView struct {
	Runs  []historyRow
	Total int
	// First and Last number the runs shown (1 is the newest); both 0 when
	// none.
	First, Last int
	// Newer and Older link to the neighbouring pages, "" at either end.
	Newer, Older string
	// Tally counts the outcomes among the newest Tallied runs, in the
	// order of outcomes.
	Tally   []outcomeCount
	Tallied int
	// Missed is how many occurrences ran nowhere before the newest
	// Tallied runs, as the ledger reported when each won.
	Missed int
}

type historyRow struct {
	Occurrence, Started, Ended, Took string
	Attempt, Missed                  int
	Replica, Outcome, Class, Error   string
	Fence, Trigger                   string
}

type outcomeCount struct {
	Outcome, Class string
	N              int
}

// outcomes are the outcomes in the order the tally lists them.
var outcomes = []string{fleet.OutcomeSucceeded, fleet.OutcomeFailed, fleet.OutcomePanicked, fleet.OutcomeTimedOut,
	fleet.OutcomeInterrupted, fleet.OutcomeGivenUp}

// outcomeClass is the CSS class of an outcome: ok, warn (interrupted: the
// occurrence stays open for another attempt) or bad.
func outcomeClass(o string) string {
	switch o {
	case fleet.OutcomeSucceeded:
		return "ok"
	case fleet.OutcomeInterrupted:
		return "warn"
	}
	return "bad"
}

// tally is what a job's newest runs add up to.
type tally struct {
	outcomes map[string]int // runs by outcome
	missed   int            // the sum of the runs' Missed
}

// tallyRuns counts runs' outcomes and adds up their missed occurrences.
func tallyRuns(runs []fleet.RunRecord) tally {
	t := tally{outcomes: map[string]int{}}
	for _, run := range runs {
		t.outcomes[run.Outcome]++
		t.missed += run.Missed
	}
	return t
}

// historyOffset reads the request's "offset" parameter: 0 when absent,
// false when it is not a whole number from 0 to fleet.MaxHistoryLimit.
func historyOffset(r *http.Request) (int, bool) {
	s := r.URL.Query().Get("offset")
	if s == "" {
		return 0, true
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > fleet.MaxHistoryLimit {
		return 0, false
	}
	return n, true
}

// history reads the page of job name's run history that starts at
// offset, and the tally of the newest runs: one read of the store when the
// page lies among the newest historyTally runs, two otherwise.
func (c *Console) history(r *http.Request, name string, offset int) (*historyView, error) {
	newest, err := c.in.History(r.Context(), name, inspect.HistoryQuery{Limit: historyTally})
	if err != nil {
		return nil, err
	}
	v := &historyView{Total: newest.Total, Tallied: len(newest.Runs)}
	t := tallyRuns(newest.Runs)
	v.Missed = t.missed
	for _, o := range outcomes {
		if t.outcomes[o] > 0 {
			v.Tally = append(v.Tally, outcomeCount{Outcome: o, Class: outcomeClass(o), N: t.outcomes[o]})
		}
	}
	var runs []fleet.RunRecord
	if offset+historyPage <= len(newest.Runs) || len(newest.Runs) == newest.Total {
		runs = newest.Runs[min(offset, len(newest.Runs)):min(offset+historyPage, len(newest.Runs))]
	} else {
		page, err := c.in.History(r.Context(), name, inspect.HistoryQuery{Offset: offset, Limit: historyPage})
		if err != nil {
			return nil, err
		}
		runs, v.Total = page.Runs, page.Total
	}
	for _, run := range runs {
		v.Runs = append(v.Runs, historyRow{
			Occurrence: utc(run.Occurrence), Started: utc(run.Started), Ended: utc(run.Ended), Took: span(run.Ended.Sub(run.Started)),
			Attempt: run.Attempt, Missed: run.Missed, Replica: clean(run.Replica), Outcome: run.Outcome, Class: outcomeClass(run.Outcome),
			Error: clean(run.Error), Fence: fence(run.Fence), Trigger: run.Trigger,
		})
	}
	if len(v.Runs) > 0 {
		v.First, v.Last = offset+1, offset+len(v.Runs)
	}
	page := func(off int) string {
		if off == 0 {
			return c.jobURL(name) + "#history"
		}
		return c.jobURL(name) + "?" + url.Values{"offset": {strconv.Itoa(off)}}.Encode() + "#history"
	}
	if offset > 0 {
		v.Newer = page(max(0, offset-historyPage))
	}
	if offset+historyPage < v.Total {
		v.Older = page(offset + historyPage)
	}
	return v, nil
}
