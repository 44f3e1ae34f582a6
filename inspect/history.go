package inspect

import (
	"context"
	"fmt"
	"sync"

	"github.com/cronguard/cronguard/fleet"
)

// DefaultHistoryLimit is how many runs History returns when
// HistoryQuery.Limit is 0.
const DefaultHistoryLimit = 20

// HistoryQuery selects a page of a job's history, newest run first.
type HistoryQuery struct {
	// Offset is how many of the newest runs to skip; it must not be
	// negative.
	Offset int
	// Limit is how many runs to return at most: 0 means
	// DefaultHistoryLimit (20); above the store's history limit, it reads
	// up to that limit. It must not be negative.
	Limit int
}

// History is a page of a job's last runs.
type History struct {
	// Job is the job's name.
	Job string
	// Runs are the runs of the page, newest first, with times in UTC.
	Runs []fleet.RunRecord
	// Total is how many runs the job's history holds in all (at most the
	// store's history limit, fleet.DefaultHistoryLimit unless configured).
	Total int
}

// historyLimiter is a store that says how many runs of a job it keeps
// (lease/redislease and lease/memory do).
type historyLimiter interface{ HistoryLimit() int }

// History returns a page of the job's last runs, newest first, as the
// replicas that ran them recorded them when they released the lease (a
// run that lost its lease records none). It reads the registry to find the
// job's key, then the job's history (lease/redislease: LRANGE and LLEN
// in one round trip, plain commands, no script). It fails with
// ErrUnknownJob when no live replica has registered name, and with
// lease.ErrInvalidArgument for a negative offset or limit.
func (in *Inspector) History(ctx context.Context, name string, q HistoryQuery) (History, error) {
	const op = "history"
	limit, err := in.historyLimit(op, q)
	if err != nil {
		return History{}, err
	}
	regs, _, _, err := in.resolve(ctx, op, name) // acts on the job as the readable entries name it
	if err != nil {
		return History{}, err
	}
	h, err := in.history(ctx, name, regs[0].Job.Key, q.Offset, limit)
	if err != nil {
		return History{}, fmt.Errorf("inspect: %s %q: %w", op, name, err)
	}
	return h, nil
}

// Histories returns a page of each job's last runs, as History does, in
// the order of jobs (from Jobs or Job): it reads no registry, only each
// job's history at its Job.Key, up to WithConcurrency reads at a time
// (lease/redislease: one round trip per job, plain commands). It fails
// with lease.ErrInvalidArgument for a negative offset or limit, and with
// the first job's error whose read failed.
func (in *Inspector) Histories(ctx context.Context, jobs []Job, q HistoryQuery) ([]History, error) {
	const op = "histories"
	limit, err := in.historyLimit(op, q)
	if err != nil {
		return nil, err
	}
	out := make([]History, len(jobs))
	errs := make([]error, len(jobs))
	sem := make(chan struct{}, in.concurrency)
	var wg sync.WaitGroup
	for i, j := range jobs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			out[i], errs[i] = in.history(ctx, j.Name, j.Key, q.Offset, limit)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("inspect: %s: job %q: %w", op, jobs[i].Name, err)
		}
	}
	return out, nil
}

// historyLimit checks q and returns the limit to read: q.Limit, or
// DefaultHistoryLimit for 0, at most the store's history limit.
func (in *Inspector) historyLimit(op string, q HistoryQuery) (int, error) {
	if q.Offset < 0 {
		return 0, invalid(op, "offset must not be negative, got %d", q.Offset)
	}
	if q.Limit < 0 {
		return 0, invalid(op, "limit must not be negative, got %d", q.Limit)
	}
	limit := q.Limit
	if limit == 0 {
		limit = DefaultHistoryLimit
	}
	most := fleet.MaxHistoryLimit
	if hl, ok := in.store.(historyLimiter); ok {
		most = hl.HistoryLimit()
	}
	return min(limit, most), nil
}

// history reads a page of the history at key, with times in UTC.
func (in *Inspector) history(ctx context.Context, name, key string, offset, limit int) (History, error) {
	runs, total, err := in.store.History(ctx, key, offset, limit)
	if err != nil {
		return History{}, err
	}
	for i := range runs {
		r := &runs[i]
		r.Occurrence, r.Started, r.Ended = r.Occurrence.UTC(), r.Started.UTC(), r.Ended.UTC()
	}
	return History{Job: name, Runs: runs, Total: total}, nil
}
