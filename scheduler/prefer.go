package scheduler

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// A preferred replica per occurrence. Without it every replica that has a
// job claims each of its occurrences: R acquires per occurrence, a herd at
// every firing. With the control plane, each replica keeps a view of the
// fleet (which live replicas have each job, with the same fingerprint),
// and rendezvous hashing over (replica, job key, occurrence) ranks them
// for each occurrence, identically on every replica that has the same
// view:
//
//   - the first choice claims at the firing (a lead ahead of the
//     occurrence with WithClaimLead, claim_ahead.go), as every replica
//     did before;
//   - the backup waits BackupGrace (and the clock difference), then reads
//     the job's round record (lease.RoundReader: one plain GET, pipelined
//     with the other occurrences due at the same instant) and claims only
//     if the round is still unclaimed;
//   - the others do not call: they log nothing above debug, report no
//     event and allocate nothing for the occurrence.
//
// The choice depends on the occurrence, not on a replica's clock, so the
// work spreads evenly whatever the clocks say. Rounds remain the safety
// net: a replica that does call is refused or wins exactly as before, so
// a wrong or stale view costs lateness (a grace), never a second run. An
// occurrence whose first choice and backup are both gone (dead, stalled,
// partitioned, or no longer having the job) before the view shows it runs
// nowhere until the view is read again (at every change of the fleet, and
// at least once per registry lapse): the next run won reports it missed.
//
// Replicas race as before when there is no view: for an occurrence less
// than two graces from its neighbours (its round's skew bound is below
// BackupGrace: the backup's claim would come after the next occurrence's);
// without the control
// plane (WithoutControlPlane, a store that is not a fleet.Store), before
// this replica appears in the view (it just started, or the job was just
// registered here), or while the job is in conflict (two fingerprints).
//
// Only a scheduled firing reaches every replica alike. A catch-up arises
// on the replica that saw its run outlive occurrences (or that started);
// a trigger announced on the control channel may be the only one that
// reaches a replica able to take it. So the others treat those as the
// backup does: they claim after the grace if the round (for a trigger,
// the trigger itself) is still there to take. A trigger that waited for
// a run is claimed at once by the replica that ran it (its release said
// the trigger waits; the others do not look again by themselves).

// BackupGrace is how long a backup waits (after the occurrence for a
// scheduled firing, after its firing for any other) before it claims an
// occurrence its first choice has not claimed, plus, for a scheduled
// firing, how far the backup's clock runs ahead of the first choice's
// (offset.go; the clocks' offsets from the store, as the registry entries
// give them). A first choice that is stalled or gone costs its
// occurrences this much lateness. It should exceed a claim's round trip
// and the error of the offsets: a backup that looks earlier claims first
// (the run is still single; only the spread suffers). A backup that sees
// its first choice claiming part of a firing looks again, every half
// grace, until its own claim's retries would end: the next occurrence
// less min(gap/10, 1s) (checkBackups).
const BackupGrace = 250 * time.Millisecond

// errNotChosen answers a scheduled firing that this replica is not
// chosen for: another replica claims it. It is no skip: nothing is
// reported.
var errNotChosen = errors.New("claim not sent: other replicas are preferred for the occurrence")

// errBackupClaimed answers a backup's firing whose round the store
// recorded claimed before the backup asked (the first choice took it).
var errBackupClaimed = fmt.Errorf("the round was claimed before the backup's grace ended: %w", lease.ErrRoundClaimed)

// errBackupLocked answers a backup's firing whose occurrence came due
// while the job ran (the last run recorded spans it): the first choice
// found the job's lease held and skipped it, and so does the backup.
var errBackupLocked = fmt.Errorf("the job was running at the occurrence: %w", &lease.LockedError{})

// role is what this replica does with one occurrence.
type role uint8

const (
	roleRace   role = iota // no view: claim at the firing, as every replica does
	roleFirst              // the first choice: claim at the firing
	roleBackup             // the backup: claim after BackupGrace if still unclaimed
	roleOther              // not chosen: no call for a scheduled firing
)

// fleetView is an immutable snapshot of the fleet as far as the choice
// needs it: for each job key this replica has, the live replicas that
// have it with the same fingerprint, this one included. Keys in conflict,
// or whose replicas do not include this one yet, are absent (race).
type fleetView struct {
	// jobs maps a key to its candidates, shared by every key with the
	// same set. The key's hash is computed at each choice, not kept: a
	// view has an entry per job, and the hash costs some 20 ns.
	jobs  map[string]*candidates
	multi bool // some key has another candidate than this replica
	// offset is this replica's clock offset from the store, as its own
	// entry published it (0 without one).
	offset time.Duration
	// index is this replica's role with the fleet's index of open
	// occurrences (index_readers.go).
	index indexRole
}

// candidates is a set of replicas, sorted by ID, with the hash of each ID,
// each one's clock offset from the store as it published it, and the
// index of this replica.
type candidates struct {
	ids     []string
	seeds   []uint64
	offsets []time.Duration
	self    int
}

// newFleetView builds the view of replica self, whose jobs' fingerprints
// by key are mine, from the registry's live replicas.
func newFleetView(self string, replicas []fleet.Replica, mine map[string]string) *fleetView {
	type entry struct {
		ids      []string
		conflict bool
	}
	byKey := make(map[string]*entry, len(mine))
	for _, r := range replicas {
		for _, j := range r.Jobs {
			fp, ok := mine[j.Key]
			if !ok {
				continue
			}
			e := byKey[j.Key]
			if e == nil {
				e = &entry{}
				byKey[j.Key] = e
			}
			if j.Fingerprint != fp {
				e.conflict = true
				continue
			}
			if !slices.Contains(e.ids, r.ID) {
				e.ids = append(e.ids, r.ID)
			}
		}
	}
	offsets := make(map[string]time.Duration, len(replicas))
	for _, r := range replicas {
		offsets[r.ID] = r.ClockOffset
	}
	v := &fleetView{jobs: make(map[string]*candidates, len(byKey)), offset: offsets[self], index: indexRoleOf(self, replicas)}
	shared := map[string]*candidates{}
	// The keys are mine's, which are the jobs' own strings: the view
	// holds no copy of the keys the registry's entries were decoded with.
	for key := range mine {
		e := byKey[key]
		if e == nil || e.conflict || !slices.Contains(e.ids, self) {
			continue
		}
		slices.Sort(e.ids)
		set := strings.Join(e.ids, "\x00")
		c := shared[set]
		if c == nil {
			c = &candidates{ids: e.ids, seeds: make([]uint64, len(e.ids)), offsets: make([]time.Duration, len(e.ids)),
				self: slices.Index(e.ids, self)}
			for i, id := range e.ids {
				c.seeds[i] = fnv1a(fnvOffset, id)
				c.offsets[i] = offsets[id]
			}
			shared[set] = c
		}
		v.jobs[key] = c
		v.multi = v.multi || len(c.ids) > 1
	}
	return v
}

// others reports whether the view has a replica besides this one.
func (v *fleetView) others() bool { return v != nil && v.multi }

// ownOffset returns this replica's clock offset from the store, as its
// entry published it; 0 without a view.
func (v *fleetView) ownOffset() time.Duration {
	if v == nil {
		return 0
	}
	return v.offset
}

// role returns this replica's role for the occurrence ms (Unix ms; 0 for
// a trigger) of the job with key.
func (v *fleetView) role(key string, ms int64) role { return v.choose(key, ms).role }

// chosen reports whether r is a role the occurrence counts on to claim it:
// its first choice or its backup.
func chosen(r role) bool { return r == roleFirst || r == roleBackup }

// choice is this replica's role for one occurrence, and which replica is
// its first choice (none with roleRace).
type choice struct {
	role  role
	c     *candidates
	first int
}

// choose returns this replica's choice for the occurrence ms (Unix ms; 0
// for a trigger) of the job with key.
func (v *fleetView) choose(key string, ms int64) choice {
	if v == nil {
		return choice{}
	}
	c, ok := v.jobs[key]
	if !ok {
		return choice{}
	}
	first, second := rank(c.seeds, fnv1a(fnvOffset, key), ms)
	ch := choice{role: roleOther, c: c, first: first}
	switch c.self {
	case first:
		ch.role = roleFirst
	case second:
		ch.role = roleBackup
	}
	return ch
}

// firstID is the first choice's replica ID ("" with roleRace).
func (ch choice) firstID() string {
	if ch.c == nil {
		return ""
	}
	return ch.c.ids[ch.first]
}

// backupWait is how long a backup waits after its own firing before it
// looks at the round: BackupGrace, plus how far this replica's clock runs
// ahead of the first choice's, as their entries say (at most
// MaxOccurrenceSkew): the first choice fires that much later.
func (ch choice) backupWait() time.Duration {
	if ch.c == nil {
		return BackupGrace
	}
	ahead := ch.c.offsets[ch.c.self] - ch.c.offsets[ch.first]
	return BackupGrace + min(max(ahead, 0), MaxOccurrenceSkew)
}

// rank returns the indexes of the highest and second highest weights of
// rendezvous hashing for (key, occurrence) over the replicas' seeds
// (second is -1 with one replica). Equal weights, which need a 64-bit
// collision, go to the lower index.
func rank(seeds []uint64, keyHash uint64, ms int64) (first, second int) {
	occ := mix64(keyHash ^ mix64(uint64(ms)))
	first, second = -1, -1
	var w1, w2 uint64
	for i, seed := range seeds {
		w := mix64(seed ^ occ)
		switch {
		case first < 0 || w > w1:
			second, w2 = first, w1
			first, w1 = i, w
		case second < 0 || w > w2:
			second, w2 = i, w
		}
	}
	return first, second
}

// FNV-1a, 64 bits: the same on every process and platform (the choice
// must agree across replicas; maphash's seeds differ per process).
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnv1a(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

// mix64 is splitmix64's finalizer: every input bit affects every output
// bit, which FNV alone does not give the last bytes it hashed.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
