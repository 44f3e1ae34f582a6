package scheduler

import (
	"context"
	"log/slog"

	"github.com/cronguard/cronguard/fleet"
)

// handOver announces on the control channel that occurrence f of j, which
// this replica is chosen for (its first choice or its backup), is left
// unclaimed here: the job's earlier run still executes here without
// renewing its lease, so this replica cannot run it. Every replica that
// has the job and is idle claims it at once (job.unclaimedFiring); the
// round lets one of them run it. Without it, the occurrence runs nowhere
// when the other chosen replica is gone or stalled before its registry
// entry lapsed (and, from a first choice, waits for the backup's grace
// otherwise).
func (s *Scheduler) handOver(j *job, f firing) {
	fs, ok := s.store.(fleet.Store)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), MaxCleanup)
	defer cancel()
	if err := fs.Publish(ctx, fleet.Message{Kind: fleet.MessageUnclaimed, Key: j.key, Round: f.ms}); err != nil {
		s.log.Warn("could not hand over an occurrence this replica cannot run; its backup claims it after the grace",
			slog.String("job", j.name), slog.Time("occurrence", s.occ(f)), slog.Any("error", err))
		return
	}
	s.debug(j, s.occ(f), "occurrence handed over: the job's earlier run still executes here without its lease")
}
