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
// crashes and retries. So two replicas read it for the whole fleet:
//
//   - The readers are the two live replicas ranked first by rendezvous
//     hashing of a fixed token over those whose registry entries say they
//     read it (fleet.Replica.ReadsIndex, which every replica of this
//     version publishes): the same two on every replica with the same
//     view, whatever jobs each has. The others do not read it.
//   - A reader announces each due entry on the control channel
//     (fleet.MessageOpen, as a release that leaves an attempt open does),
//     which brings it to every replica that has the job, the reader's own
//     subscription included; there the job's owner offers it to the
//     preferred replica of the occurrence (prefer.go), as before. A reader
//     whose announcement fails, or that is not subscribed, also offers the
//     entries of its own jobs itself. Entries past their deadline it gives
//     up, as every replica did before.
//   - Two, so that one reader that dies or stalls costs no resume
//     latency: the other still reads every resumePoll, and the registry
//     drops the dead one within a lapse, which moves the role on. Both
//     gone at once delays the resumes until then.
//   - A replica reads for itself, offering the entries of its own jobs
//     and announcing nothing, while it has no view of the fleet or its own
//     entry is not in it yet (it just started, or its entry lapsed), as
//     every replica did before. Replicas of earlier versions do what they
//     did (they do not publish ReadsIndex) and are never chosen.
//   - The two readers, and a replica reading for itself, may offer one
//     entry twice: a pending claim or a run of the job absorbs the second,
//     and the rounds decide the rest.

// indexToken is what the readers of the index are ranked for: a constant,
// so that every replica ranks the same two first.
const indexToken = "cronguard:open-index"

// indexReaders is how many replicas read the index for the fleet.
const indexReaders = 2

// indexRole is what a replica does with the fleet's index.
type indexRole uint8

const (
	indexReadOwn      indexRole = iota // read it and offer the entries of its own jobs (no view, or not in it yet)
	indexReadAnnounce                  // a reader for the fleet: read it and announce each due entry
	indexNone                          // another replica reads it
)

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
	if me < 0 {
		return indexReadOwn
	}
	seeds := make([]uint64, len(ids))
	for i, id := range ids {
		seeds[i] = fnv1a(fnvOffset, id)
	}
	first, second := rank(seeds, fnv1a(fnvOffset, indexToken), 0)
	if me != first && me != second {
		return indexNone
	}
	if len(replicas) < 2 {
		return indexReadOwn // alone: nobody to announce to
	}
	return indexReadAnnounce
}

// indexRole returns this replica's role with the fleet's index: reading
// for itself without a view.
func (v *fleetView) indexRole() indexRole {
	if v == nil {
		return indexReadOwn
	}
	return v.index
}

// announceDue publishes a fleet.MessageOpen for each due entry of the
// index, in one round trip where the store can (fleet.BatchPublisher). It
// reports whether the announcements also reach this replica's own jobs:
// they were published and this replica is subscribed.
func (cp *controlPlane) announceDue(due []fleet.Due) bool {
	if len(due) == 0 {
		return true
	}
	msgs := make([]fleet.Message, len(due))
	for i, d := range due {
		msgs[i] = fleet.Message{Kind: fleet.MessageOpen, Key: d.Key, Round: d.Round}
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
		return false
	case err != nil:
		cp.s.log.Debug("could not announce the fleet's due open occurrences", slog.Int("occurrences", len(due)), slog.Any("error", err))
		return false
	case cp.announceFailing:
		cp.announceFailing = false
		cp.s.log.Info("the fleet's due open occurrences can be announced again")
	}
	return cp.unsub != nil
}
