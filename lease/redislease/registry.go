package redislease

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

// var _ fleet.Store is asserted in channel.go, where the last method is.

// replicaRecord is a fleet.Replica as stored (JSON).
type replicaRecord struct {
	ID        string      `json:"id"`
	Version   string      `json:"version"`
	StartedAt int64       `json:"startedAt"`
	RefreshMs int64       `json:"refreshMs"`
	Jobs      []jobRecord `json:"jobs"`              // earlier versions: the jobs, inline; now null
	JobList   string      `json:"jobList,omitempty"` // the digest of the job list (registry_entry.go)
	OffsetMs  int64       `json:"clockOffsetMs,omitempty"`
	Reads     bool        `json:"readsIndex,omitempty"`
}

type jobRecord struct {
	Name        string `json:"name"`
	Key         string `json:"key"`
	Schedule    string `json:"schedule"`
	Spec        string `json:"spec"`
	Fingerprint string `json:"fingerprint"`
}

func checkReplicaID(op, id string) error {
	if id == "" || len(id) > fleet.MaxReplicaIDBytes {
		return opErr(op, "", fmt.Errorf("%w: replica ID must be 1 to %d bytes", lease.ErrInvalidArgument, fleet.MaxReplicaIDBytes))
	}
	if err := lease.ValidateOwner(id); err != nil {
		return opErr(op, "", fmt.Errorf("replica ID: %w", err))
	}
	return nil
}

func checkEntryTTL(op string, ttl time.Duration) error {
	if err := lease.ValidateTTL(ttl); err != nil {
		return opErr(op, "", fmt.Errorf("entry %w", err))
	}
	return nil
}

// minJobListTTL is the least a job list lives unless refreshed. A list is
// shared by the replicas that have the same jobs, and each renews it with
// its own publish and refresh: at least this long, so that a replica that
// refreshes often does not cut the life of a list that one refreshing
// seldom still names (a list found missing is published again at the next
// refresh, but a read meanwhile misses that replica).
const minJobListTTL = 10 * time.Minute

// jobListTTL is how long a job list lives unless refreshed, for entries
// living ttl.
func jobListTTL(ttl time.Duration) time.Duration { return max(2*ttl, minJobListTTL) }

// publishedLists remembers the job list each replica published through a
// Store, so that its refresh renews the list too.
type publishedLists struct {
	mu sync.Mutex
	m  map[string]string // replica ID -> digest of its job list
}

func (p *publishedLists) set(id, digest string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if digest == "" {
		delete(p.m, id)
		return
	}
	if p.m == nil {
		p.m = make(map[string]string)
	}
	p.m[id] = digest
}

func (p *publishedLists) get(id string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.m[id]
}

// PublishReplica writes r's registry entry, living ttl unless refreshed,
// and returns r's conflicts with the other live replicas. See fleet.Store.
// When other entries cannot be read, the entry is written and the
// conflicts with the readable ones come with a *fleet.UnreadableError.
// The entry names r's job list, which is stored once for every replica
// that has the same jobs (registry_entry.go); a read returns them in the
// order of their keys.
func (s *Store) PublishReplica(ctx context.Context, r fleet.Replica, ttl time.Duration) ([]fleet.Conflict, error) {
	const op = "publish replica"
	if err := checkReplicaID(op, r.ID); err != nil {
		return nil, err
	}
	if err := checkEntryTTL(op, ttl); err != nil {
		return nil, err
	}
	fk := fleetKeysFor(s.prefix)
	keys := []string{fk.replicas, fk.entry + r.ID, fk.generation}
	args := []string{r.ID, "", strconv.FormatInt(ttl.Milliseconds(), 10)}
	var digest string
	if len(r.Jobs) > 0 {
		// In key order, so that replicas that register the same jobs in
		// another order (from a map, say) name the same list.
		jobs := slices.Clone(r.Jobs)
		slices.SortFunc(jobs, func(a, b fleet.Job) int { return cmp.Or(cmpString(a.Key, b.Key), cmpString(a.Name, b.Name)) })
		list := encodeJobs(jobs)
		digest = jobListDigest(list)
		keys = append(keys, fk.jobList+digest)
		args = append(args, list, strconv.FormatInt(jobListTTL(ttl).Milliseconds(), 10))
	}
	args[1] = encodeEntry(r, digest)
	if err := registryPublishScript.Exec(ctx, s.client, keys, args).Error(); err != nil {
		return nil, wrapErr(ctx, op, "", err)
	}
	s.lists.set(r.ID, digest)
	all, err := s.Replicas(ctx)
	if err != nil && !isUnreadable(err) {
		return nil, err
	}
	return fleet.Involving(fleet.FindConflicts(all), r.ID), err
}

// isUnreadable reports whether err is a *fleet.UnreadableError: the read
// returned the entries it could read.
func isUnreadable(err error) bool {
	var u *fleet.UnreadableError
	return errors.As(err, &u)
}

// RefreshReplica keeps replica id's entry alive for ttl more, and the job
// list it published through this Store. See fleet.Store. It reports the
// entry not found, so that the replica publishes it again, when the entry
// names another list than the one published through this Store (or one
// when none was: a failover that restored an older entry, another
// client's publish), or when that list lapsed.
func (s *Store) RefreshReplica(ctx context.Context, id string, ttl time.Duration) (int64, bool, error) {
	const op = "refresh replica"
	if err := checkReplicaID(op, id); err != nil {
		return 0, false, err
	}
	if err := checkEntryTTL(op, ttl); err != nil {
		return 0, false, err
	}
	fk := fleetKeysFor(s.prefix)
	keys := []string{fk.replicas, fk.entry + id, fk.generation}
	args := []string{id, strconv.FormatInt(ttl.Milliseconds(), 10)}
	if digest := s.lists.get(id); digest != "" {
		keys = append(keys, fk.jobList+digest)
		args = append(args, strconv.FormatInt(jobListTTL(ttl).Milliseconds(), 10), digest)
	}
	resp := registryRefreshScript.Exec(ctx, s.client, keys, args)
	if err := resp.Error(); err != nil {
		return 0, false, wrapErr(ctx, op, "", err)
	}
	r, err := intsReply(resp)
	if err != nil || r.n != 2 {
		return 0, false, internalErr(op, "", fmt.Errorf("%w: %v", errBadReply, r.v[:r.n]))
	}
	return r.v[1], r.v[0] == 1, nil
}

// DropReplica removes replica id's entry.
func (s *Store) DropReplica(ctx context.Context, id string) error {
	const op = "drop replica"
	if err := checkReplicaID(op, id); err != nil {
		return err
	}
	s.lists.set(id, "") // the list stays for the replicas that share it, and lapses after the last
	fk := fleetKeysFor(s.prefix)
	res := s.client.DoMulti(ctx,
		s.client.B().Zrem().Key(fk.replicas).Member(id).Build(),
		s.client.B().Del().Key(fk.entry+id).Build(),
		s.client.B().Incr().Key(fk.generation).Build())
	for _, r := range res {
		if err := r.Error(); err != nil {
			return wrapErr(ctx, op, "", err)
		}
	}
	return nil
}

// Replicas returns the live replicas' entries, sorted by ID. Replicas
// that name the same job list share one Jobs slice: read it, do not
// modify it. An entry that cannot be decoded, or that names a job list
// that cannot, is left out, and the others come with a
// *fleet.UnreadableError that names it (lease.ErrInternal).
func (s *Store) Replicas(ctx context.Context) ([]fleet.Replica, error) {
	const op = "replicas"
	fk := fleetKeysFor(s.prefix)
	res := s.client.DoMulti(ctx,
		s.client.B().Time().Build(),
		s.client.B().Zrange().Key(fk.replicas).Min("0").Max("-1").Withscores().Build())
	now, err := serverTime(res[0])
	if err != nil {
		return nil, wrapErr(ctx, op, "", err)
	}
	scores, err := res[1].AsZScores()
	if err != nil {
		return nil, wrapErr(ctx, op, "", err)
	}
	var ids []string
	expires := map[string]time.Time{}
	for _, z := range scores {
		exp := time.UnixMilli(int64(z.Score))
		if exp.After(now) {
			ids = append(ids, z.Member)
			expires[z.Member] = exp
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = fk.entry + id
	}
	vals, err := s.client.Do(ctx, s.client.B().Mget().Key(keys...).Build()).ToArray()
	if err != nil {
		return nil, wrapErr(ctx, op, "", err)
	}
	var out []fleet.Replica
	var bad unreadable
	named := map[string][]int{} // digest -> the replicas (indexes into out) whose entry names it
	for i, v := range vals {
		raw, err := v.ToString()
		if err != nil {
			continue // lapsed between the two reads
		}
		rec, jobs, err := decodeEntry(raw)
		if err != nil {
			bad.add(ids[i], internalErr(op, "", fmt.Errorf("%w: the entry of replica %q is not JSON", lease.ErrInternal, ids[i])))
			continue
		}
		if rec.JobList != "" && !isJobListDigest(rec.JobList) {
			bad.add(ids[i], internalErr(op, "", fmt.Errorf("%w: the entry of replica %q names a job list that is not a digest", lease.ErrInternal, ids[i])))
			continue
		}
		r := fleet.Replica{ID: rec.ID, Version: rec.Version, Started: time.UnixMilli(rec.StartedAt),
			Refresh: time.Duration(rec.RefreshMs) * time.Millisecond, Expires: expires[ids[i]],
			ClockOffset: time.Duration(rec.OffsetMs) * time.Millisecond, ReadsIndex: rec.Reads}
		if len(jobs) > 0 {
			r.Jobs = jobs
		}
		if rec.JobList != "" {
			named[rec.JobList] = append(named[rec.JobList], len(out))
		}
		out = append(out, r)
	}
	if len(named) > 0 {
		if out, err = s.readJobLists(ctx, op, out, named, &bad); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b fleet.Replica) int { return cmpString(a.ID, b.ID) })
	return out, bad.err()
}

// unreadable gathers the registry entries a read could not decode, for a
// fleet.UnreadableError.
type unreadable struct {
	errs map[string]error // replica ID -> why its entry could not be read
}

func (u *unreadable) add(id string, err error) {
	if u.errs == nil {
		u.errs = make(map[string]error)
	}
	u.errs[id] = err
}

// err returns nil when every entry was read, and otherwise a
// *fleet.UnreadableError naming the replicas in order, with the first's
// error.
func (u *unreadable) err() error {
	if len(u.errs) == 0 {
		return nil
	}
	ids := slices.Sorted(maps.Keys(u.errs))
	return &fleet.UnreadableError{Replicas: ids, Err: u.errs[ids[0]]}
}

// readJobLists reads each job list that named's replicas name, with one
// MGET, decodes each once and gives its jobs to every replica that names
// it: those replicas share one slice, which callers only read. A replica
// whose list is missing (it lapsed; its replica publishes it again at its
// next refresh) is left out, as an entry that lapsed between the reads is;
// one whose list cannot be decoded is left out and added to bad.
func (s *Store) readJobLists(ctx context.Context, op string, out []fleet.Replica, named map[string][]int, bad *unreadable) ([]fleet.Replica, error) {
	fk := fleetKeysFor(s.prefix)
	digests := make([]string, 0, len(named))
	keys := make([]string, 0, len(named))
	for d := range named {
		digests = append(digests, d)
		keys = append(keys, fk.jobList+d)
	}
	vals, err := s.client.Do(ctx, s.client.B().Mget().Key(keys...).Build()).ToArray()
	if err != nil {
		return nil, wrapErr(ctx, op, "", err)
	}
	if len(vals) != len(keys) {
		return nil, internalErr(op, "", fmt.Errorf("%w: %d job lists for %d keys", errBadReply, len(vals), len(keys)))
	}
	var missing []bool // by index into out: its list is missing or unreadable
	leave := func(k int) {
		if missing == nil {
			missing = make([]bool, len(out))
		}
		for _, i := range named[digests[k]] {
			missing[i] = true
		}
	}
	for k, v := range vals {
		raw, err := v.ToString()
		if err != nil {
			leave(k)
			continue
		}
		jobs, err := decodeJobs(raw)
		if err != nil {
			leave(k)
			for _, i := range named[digests[k]] {
				bad.add(out[i].ID, internalErr(op, "", fmt.Errorf("%w: job list %q of replica %q is not JSON", lease.ErrInternal, digests[k], out[i].ID)))
			}
			continue
		}
		if len(jobs) == 0 {
			jobs = nil
		}
		for _, i := range named[digests[k]] {
			out[i].Jobs = jobs
		}
	}
	if missing != nil {
		kept := out[:0]
		for i, r := range out {
			if !missing[i] {
				kept = append(kept, r)
			}
		}
		clear(out[len(kept):])
		out = kept
	}
	return out, nil
}

// Conflicts returns the conflicts among live replicas; among the readable
// ones, with a *fleet.UnreadableError, when some entries cannot be read.
func (s *Store) Conflicts(ctx context.Context) ([]fleet.Conflict, error) {
	all, err := s.Replicas(ctx)
	if err != nil && !isUnreadable(err) {
		return nil, err
	}
	return fleet.FindConflicts(all), err
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
