package scheduler

import (
	"log/slog"
	"slices"

	"github.com/cronguard/cronguard/fleet"
)

// Who reads the fleet's index of open occurrences (resume.go). If every
// replica read it every resumePoll, a fleet of R replicas would run R
// reads a second whatever its load: at 20 replicas and 100 occurrences a
// second, 0.2 scripts per occurrence for an index that is empty but for
// crashes and retries. So the fleet reads it about four times a second,
// whatever its size:
//
//   - Two readers, the live replicas ranked first by rendezvous hashing
//     of a fixed token over those whose registry entries say they read it
//     (fleet.Replica.ReadsIndex, which every replica of this version
//     publishes), read it every resumePoll: the same two on every replica
//     with the same view, whatever jobs each has. A reader announces each
//     due entry on the control channel (fleet.MessageOpen, as a release
//     that leaves an attempt open does), which brings it to every replica
//     that has the job, the reader's own subscription included; there the
//     job's owner offers it to the preferred replica of the occurrence
//     (prefer.go), as before. The reader offers the entries of its own
//     jobs itself, as every replica that reads does, and ignores its own
//     announcements: its jobs do not wait on its subscription.
//   - Every other replica reads it for itself, offering the entries of its
//     own jobs and announcing nothing, once every indexEvery polls: the
//     others together read about twice a second. That covers the readers
//     dying together (two replicas of one machine): their runs come due
//     and are resumed by the replicas that have their jobs, without
//     waiting for the registry to drop the readers and name new ones. (A
//     job that only a few replicas of a large fleet have waits for their
//     next read meanwhile: up to indexEvery seconds.)
//   - Two readers, so that one that dies or stalls costs no resume
//     latency: the other still reads every resumePoll, and the registry
//     drops the dead one within a lapse, which moves the role on.
//   - A replica reads for itself every resumePoll while it has no view of
//     the fleet or its own entry is not in it yet (it just started, or its
//     entry lapsed), as every replica did before. Replicas of earlier
//     versions do what they did (they do not publish ReadsIndex) and are
//     never chosen.
//   - Whoever reads gives up the entries past their deadline (GiveUp
//     reports one caller first).
//   - The readers' announcements and the others' own reads may offer one
//     entry twice: a pending claim or a run of the job absorbs the second,
//     and the rounds decide the rest.

// indexToken is what the readers of the index are ranked for: a constant,
// so that every replica ranks the same two first.
const indexToken = "cronguard:open-index"

// indexReaders is how many replicas read the index for the fleet.
const indexReaders = 2

// indexRole is what a replica does with the fleet's index, and how often.
type indexRole struct {
	announce bool // a reader for the fleet: announce each due entry (else offer those of its own jobs)
	every    int  // read it once every this many polls (1: every resumePoll)
}

// indexReadOwn is the role of a replica without a place in a view of the
// fleet: it reads the index every resumePoll for its own jobs.
var indexReadOwn = indexRole{every: 1}

// indexRoleOf returns replica self's role with the index, among the live
// replicas of the registry.
func indexRoleOf(self string, replicas []fleet.Replica) indexRole {
	ids := make([]string, 0, len(replicas))
	for _, r := range replicas {
		if r.ReadsIndex {
			ids = append(ids, r.ID)
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	me := slices.Index(ids, self)
	if me < 0 || len(replicas) < 2 {
		return indexReadOwn // not in the view, or alone: nobody to announce to
	}
	seeds := make([]uint64, len(ids))
	for i, id := range ids {
		seeds[i] = fnv1a(fnvOffset, id)
	}
	first, second := rank(seeds, fnv1a(fnvOffset, indexToken), 0)
	if me == first || me == second {
		return indexRole{announce: true, every: 1}
	}
	return indexRole{every: indexEvery(len(ids))}
}

// indexEvery returns how many polls apart each of the replicas that are
// not readers reads the index in a fleet of n that read it: they read
// about indexReaders times a second in all, and at least every second.
func indexEvery(n int) int {
	others := n - indexReaders
	return max(1, (others+indexReaders-1)/indexReaders)
}

// indexRole returns this replica's role with the fleet's index: reading
// for itself every resumePoll without a view.
func (v *fleetView) indexRole() indexRole {
	if v == nil {
		return indexReadOwn
	}
	return v.index
}

// announceDue publishes a fleet.MessageOpen for each due entry of the
// index, in one round trip where the store can (fleet.BatchPublisher),
// naming this replica as its publisher: the replicas that have the job
// offer it to its owner, and this one, which offers the entries of its own
// jobs itself, ignores its own (controlPlane.onMessage).
func (cp *controlPlane) announceDue(due []fleet.Due) {
	if len(due) == 0 {
		return
	}
	self := cp.s.cfg.instanceID
	msgs := make([]fleet.Message, len(due))
	for i, d := range due {
		msgs[i] = fleet.Message{Kind: fleet.MessageOpen, Key: d.Key, Round: d.Round, Replica: self}
	}
	ctx, cancel := cp.opContext()
	defer cancel()
	var err error
	if bp, ok := cp.store.(fleet.BatchPublisher); ok {
		err = bp.PublishBatch(ctx, msgs)
	} else {
		for _, m := range msgs {
			if err = cp.store.Publish(ctx, m); err != nil {
				break
			}
		}
	}
	switch {
	case err != nil && !cp.announceFailing:
		cp.announceFailing = true
		cp.s.log.Warn("could not announce the fleet's due open occurrences; only this replica's own jobs are resumed from them until it works again",
			slog.Int("occurrences", len(due)), slog.Any("error", err))
	case err != nil:
		cp.s.log.Debug("could not announce the fleet's due open occurrences", slog.Int("occurrences", len(due)), slog.Any("error", err))
	case cp.announceFailing:
		cp.announceFailing = false
		cp.s.log.Info("the fleet's due open occurrences can be announced again")
	}
}
