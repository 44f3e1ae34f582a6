package readme

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/google/uuid"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/redislease"
	"github.com/cronguard/cronguard/scheduler"
)

// The Go blocks of docs/migrating-from-gocron.md, each in a function that
// provides what the guide says the blocks are given (ctx, locker, elector,
// store, the job functions). Compiled, not run.

var syncInventory, sendReport, purge func(context.Context) error

func gocronScheduler(locker gocron.Locker) error {
	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(locker))
	if err != nil {
		return err
	}
	// s.NewJob(...) for each job, then:
	s.Start()
	defer s.Shutdown()
	return nil
}

func cronguardScheduler() error {
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"localhost:6379"}, DisableCache: true})
	if err != nil {
		return err
	}
	defer client.Close()
	store, err := redislease.New(client) // github.com/cronguard/cronguard/lease/redislease
	if err != nil {
		return err
	}
	s, err := scheduler.New(store)
	if err != nil {
		return err
	}
	// s.Register(...) for each job, then:
	if err := s.Start(); err != nil {
		return err
	}
	defer func() {
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = s.Shutdown(shutdownCtx) // cancels running jobs, waits for them, releases their leases
	}()
	return nil
}

func gocronDuration(s gocron.Scheduler) error {
	_, err := s.NewJob(
		gocron.DurationJob(time.Minute),
		gocron.NewTask(func(ctx context.Context) error { return syncInventory(ctx) }),
		gocron.WithName("sync-inventory"),
	)
	return err
}

func cronguardEvery(s *scheduler.Scheduler) error {
	err := s.Register("sync-inventory", scheduler.Every(time.Minute), syncInventory)
	return err
}

func gocronCron(s gocron.Scheduler) error {
	_, err := s.NewJob(
		gocron.CronJob("*/15 * * * *", false),
		gocron.NewTask(func(ctx context.Context) error { return purge(ctx) }),
		gocron.WithName("purge"),
	)
	return err
}

func cronguardCron(s *scheduler.Scheduler) error {
	err := s.Register("purge", scheduler.Cron("*/15 * * * *"), purge)
	return err
}

func gocronDaily(locker gocron.Locker) error {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		return err
	}
	s, err := gocron.NewScheduler(gocron.WithLocation(paris), gocron.WithDistributedLocker(locker))
	if err != nil {
		return err
	}
	_, err = s.NewJob(
		gocron.DailyJob(1, gocron.NewAtTimes(gocron.NewAtTime(9, 30, 0))),
		gocron.NewTask(func(ctx context.Context) error { return sendReport(ctx) }),
		gocron.WithName("daily-report"),
	)
	return err
}

func cronguardDaily(s *scheduler.Scheduler) error {
	err := s.Register("daily-report", scheduler.Cron("CRON_TZ=Europe/Paris 30 9 * * *"), sendReport)
	return err
}

func gocronSingleton(s gocron.Scheduler) error {
	_, err := s.NewJob(
		gocron.DurationJob(time.Minute),
		gocron.NewTask(func(ctx context.Context) error { return syncInventory(ctx) }),
		gocron.WithName("sync-inventory"),
		gocron.WithSingletonMode(gocron.LimitModeReschedule),
	)
	return err
}

func cronguardSingleton(s *scheduler.Scheduler) error {
	err := s.Register("sync-inventory", scheduler.Every(time.Minute), syncInventory,
		scheduler.WithTTL(30*time.Second), // the lease; renewed every TTL/3 while the job runs
		scheduler.WithTimeout(10*time.Minute),
	)
	return err
}

func gocronWait(locker gocron.Locker) error {
	s, err := gocron.NewScheduler(
		gocron.WithDistributedLocker(locker),
		gocron.WithLimitConcurrentJobs(2, gocron.LimitModeWait),
	)
	if err != nil {
		return err
	}
	_, err = s.NewJob(
		gocron.DurationJob(time.Minute),
		gocron.NewTask(func(ctx context.Context) error { return syncInventory(ctx) }),
		gocron.WithName("sync-inventory"),
		gocron.WithSingletonMode(gocron.LimitModeWait),
	)
	return err
}

func cronguardBufferAndLimit(s *scheduler.Scheduler) error {
	err := s.Register("sync-inventory", scheduler.Every(time.Minute), syncInventory,
		scheduler.WithOverlap(scheduler.OverlapBufferOne), // wait for the running occurrence, then run
		scheduler.WithConcurrencyLimit("batch", 2),        // at most 2 "batch" jobs at once, fleet-wide
	)
	return err
}

func gocronElector(elector gocron.Elector) (gocron.Scheduler, error) {
	s, err := gocron.NewScheduler(gocron.WithDistributedElector(elector))
	return s, err
}

func cronguardNoElector(store lease.Store) (*scheduler.Scheduler, error) {
	s, err := scheduler.New(store)
	return s, err
}

func gocronListener(s gocron.Scheduler) error {
	_, err := s.NewJob(
		gocron.DurationJob(time.Minute),
		gocron.NewTask(func(ctx context.Context) error { return syncInventory(ctx) }),
		gocron.WithName("sync-inventory"),
		gocron.WithEventListeners(gocron.AfterJobRunsWithError(func(_ uuid.UUID, name string, err error) {
			slog.Error("job failed", "job", name, "error", err)
		})),
	)
	return err
}

func cronguardObserver(store lease.Store) (*scheduler.Scheduler, error) {
	s, err := scheduler.New(store, scheduler.WithObserver(func(ev scheduler.Event) {
		if ev.Kind == scheduler.EventFailed {
			slog.Error("job failed", "job", ev.Job, "error", ev.Err)
		}
	}))
	return s, err
}

var _ = []any{gocronScheduler, cronguardScheduler, gocronDuration, cronguardEvery, gocronCron,
	cronguardCron, gocronDaily, cronguardDaily, gocronSingleton, cronguardSingleton, gocronWait, cronguardBufferAndLimit, gocronElector,
	cronguardNoElector, gocronListener, cronguardObserver}

func TestMigrationGuide_GoBlocks_InSync(t *testing.T) {
	guide, err := os.ReadFile("../../docs/migrating-from-gocron.md")
	require.NoError(t, err)
	self, err := os.ReadFile("migrating_test.go")
	require.NoError(t, err)
	blocks := goBlock.FindAllStringSubmatch(string(guide), -1)
	require.Len(t, blocks, 16, "the guide's Go blocks, one function each here; add new ones here")
	for _, b := range blocks {
		assert.Contains(t, normalize(string(self)), normalize(b[1]),
			"a Go block of docs/migrating-from-gocron.md is not (verbatim) in examples/readme/migrating_test.go:\n%s", strings.TrimSpace(b[1]))
	}
}
