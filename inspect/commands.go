package inspect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"unicode/utf8"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// Pause pauses the job fleet-wide: from now on, every scheduled acquire
// of it, on every replica, is refused by the store (the scheduler reports
// each as skipped with scheduler.SkipPaused and records the occurrence as
// handled: not missed, not caught up later). A run in progress is not
// stopped: it finishes and releases as usual. Pausing a paused job
// replaces its note. by says who pauses (an operator's name; it must pass
// lease.ValidateOwner) and note why (valid UTF-8, at most
// fleet.MaxPauseNoteBytes; may be empty).
//
// A pause does not stop triggers at the store (a trigger acquire ignores
// pauses), but Trigger refuses a paused job. It fails with ErrUnknownJob
// when no live replica has registered name.
func (in *Inspector) Pause(ctx context.Context, name, by, note string) error {
	const op = "pause"
	if err := checkBy(op, by); err != nil {
		return err
	}
	if len(note) > fleet.MaxPauseNoteBytes || !utf8.ValidString(note) {
		return invalid(op, "note must be valid UTF-8 of at most %d bytes, got %d bytes", fleet.MaxPauseNoteBytes, len(note))
	}
	regs, _, _, err := in.resolve(ctx, op, name) // acts on the job as the readable entries name it
	if err != nil {
		return err
	}
	if err := in.store.SetPause(ctx, regs[0].Job.Key, fleet.Pause{By: by, Note: note}); err != nil {
		return fmt.Errorf("inspect: %s %q: %w", op, name, err)
	}
	in.log.Info("job paused fleet-wide", slog.String("job", name), slog.String("by", by), slog.String("note", note))
	return nil
}

// Resume lifts the job's pause and reports whether it was paused. The
// occurrences that came due while it was paused are not run: they were
// handled as paused, and catch-up (scheduler.WithCatchUp) does not bring
// them back. The next occurrence after Resume runs as usual. Triggers that
// wait for the job are announced on the control channel, so that a
// replica runs them now (lease/redislease: a TIME and LRANGE, then a
// PUBLISH when some wait). It fails with ErrUnknownJob when no live
// replica has registered name.
func (in *Inspector) Resume(ctx context.Context, name string) (bool, error) {
	const op = "resume"
	regs, _, _, err := in.resolve(ctx, op, name) // acts on the job as the readable entries name it
	if err != nil {
		return false, err
	}
	key := regs[0].Job.Key
	was, err := in.store.ClearPause(ctx, key)
	if err != nil {
		return false, fmt.Errorf("inspect: %s %q: %w", op, name, err)
	}
	if was {
		in.log.Info("job resumed", slog.String("job", name))
		in.announceWaiting(ctx, name, key)
	}
	return was, nil
}

// announceWaiting announces on the control channel that triggers wait for
// the job with lease key key, if any do: the replicas that found it paused
// when they tried them do not try again by themselves, and take them when
// they hear this. A failure is logged, not returned (the pause is lifted):
// the triggers then wait for the job's next run to end.
func (in *Inspector) announceWaiting(ctx context.Context, name, key string) {
	n, err := in.store.PendingTriggers(ctx, key)
	if err == nil && n > 0 {
		err = in.store.Publish(ctx, fleet.Message{Kind: fleet.MessageTrigger, Key: key})
	}
	if err != nil {
		in.log.Warn("job resumed, but the triggers that may wait for it could not be announced; they run after its next run",
			slog.String("job", name), slog.Any("error", err))
	}
}

// ForceRelease deletes the live lease on the job, whoever holds it, and
// returns what it was. It is logged at warn level, with by (who asked),
// the holder's label, its fence and the short form of its lease.
//
// It is unsafe unless the job's writes are fenced (package fencing): the
// holder is not stopped. It learns of the loss at its next renewal (within
// a third of its TTL) and its context is cancelled then, but a job that
// ignores its context, or is stuck, keeps running, while another replica
// may now take the lease and run the job at the same time. Only fenced
// writes are safe from the older run. Use it when a holder is known to be
// dead and its lease's TTL is too long to wait for; never automatically.
//
// It fails with ErrNotHeld (and lease.ErrNotFound) when no live lease
// holds the job, and with ErrUnknownJob when no live replica has
// registered name.
func (in *Inspector) ForceRelease(ctx context.Context, name, by string) (lease.Info, error) {
	const op = "force release"
	if err := checkBy(op, by); err != nil {
		return lease.Info{}, err
	}
	regs, _, _, err := in.resolve(ctx, op, name) // acts on the job as the readable entries name it
	if err != nil {
		return lease.Info{}, err
	}
	info, err := in.store.ForceRelease(ctx, regs[0].Job.Key)
	if errors.Is(err, lease.ErrNotFound) {
		return lease.Info{}, fmt.Errorf("%w: %s %q (%w)", ErrNotHeld, op, name, lease.ErrNotFound)
	}
	if err != nil {
		return lease.Info{}, fmt.Errorf("inspect: %s %q: %w", op, name, err)
	}
	in.log.Warn("job lease force-released by an operator; its holder may still be running, and only fenced writes are safe from it",
		slog.String("job", name), slog.String("by", by), slog.String("owner", info.Owner),
		slog.Any("fence", info.Fence), slog.String("lease_hash", lease.ShortID(info.IDHash)))
	return info, nil
}
