package console_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/console"
	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/redislease"
	"github.com/cronguard/cronguard/scheduler"
)

// Bench fleet: benchJobs jobs on each of benchReplicas schedulers, each
// job with benchRuns runs in its history.
const (
	benchJobs     = 100
	benchReplicas = 3
	benchRuns     = 30
)

// BenchmarkConsole_Pages measures the server time of each page of a
// console (its ServeHTTP, reads of Redis included, without the network to
// the browser) on a fleet of 100 jobs registered by 3 schedulers on a real
// redis-server, each job with 30 runs in its history, 10 of them paused and
// 5 running. The target is under 100ms per page.
//
//	go test ./console -run '^$' -bench BenchmarkConsole_Pages -benchtime 200x
func BenchmarkConsole_Pages(b *testing.B) {
	f := newLiveFleet(b)
	yearly := scheduler.Cron("0 0 1 1 *") // no job comes due during the run
	var ids []string
	for i := range benchReplicas {
		id := fmt.Sprintf("replica-%d", i+1)
		ids = append(ids, id)
		f.start(b, id, func(s *scheduler.Scheduler) error {
			for j := range benchJobs {
				if err := s.Register(fmt.Sprintf("job-%03d", j), yearly, f.runs.job); err != nil {
					return err
				}
			}
			return nil
		})
	}
	f.waitReplicas(b, ids...)

	// Runs, pauses and holders, written as the replicas would write them
	// (under the scheduler's key prefix "job:").
	store, err := redislease.New(f.admin, redislease.WithPrefix(f.prefix))
	require.NoError(b, err)
	ctx := context.Background()
	for j := range benchJobs {
		name := fmt.Sprintf("job-%03d", j)
		key := "job:" + name
		replica := ids[j%benchReplicas]
		for r := range benchRuns {
			l, err := store.Acquire(ctx, key, time.Minute, lease.WithOwner(replica+"/"+name))
			require.NoError(b, err)
			outcome, errText := fleet.OutcomeSucceeded, ""
			if r%7 == 0 {
				outcome, errText = fleet.OutcomeFailed, "upstream: 503 Service Unavailable"
			}
			_, err = store.ReleaseWithStatus(ctx, l, fleet.Status{Occurrence: l.AcquiredAt, Owner: l.Owner, Fence: l.Fence,
				Started: l.AcquiredAt, Duration: 2 * time.Second, Outcome: outcome, Error: errText, Replica: replica, Attempt: 1})
			require.NoError(b, err)
		}
		if j%10 == 0 {
			require.NoError(b, f.in.Pause(ctx, name, "alice", "held for the quarterly close"))
		}
		if j%20 == 5 {
			_, err := store.Acquire(ctx, key, time.Hour, lease.WithOwner(replica+"/"+name))
			require.NoError(b, err)
		}
	}
	c, err := console.New(f.in, console.WithLogger(slog.New(slog.DiscardHandler)),
		console.WithAuthorizer(allowAll))
	require.NoError(b, err)

	for _, page := range []struct{ name, path string }{
		{"fleet", "/"},
		{"jobs", "/jobs"},
		{"job", "/jobs/job-005"},
		{"job_history_page_2", "/jobs/job-005?offset=20"},
		{"release_confirm", "/jobs/job-005/release"},
	} {
		b.Run(page.name, func(b *testing.B) {
			var bytes int
			for b.Loop() {
				rec := httptest.NewRecorder()
				c.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, page.path, nil))
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: %d: %s", page.path, rec.Code, rec.Body.String())
				}
				bytes = rec.Body.Len()
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/page")
			b.ReportMetric(float64(bytes), "bytes/page")
		})
	}
}
