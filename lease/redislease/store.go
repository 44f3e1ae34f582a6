package redislease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/redis/rueidis"

	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/internal/luascripts"
	"github.com/cronguard/cronguard/internal/retry"
	"github.com/cronguard/cronguard/lease"
)

// The scripts, built once. Exec sends EVALSHA and falls back to EVAL when
// the server answers NOSCRIPT (after a restart or SCRIPT FLUSH).
var (
	acquireScript = rueidis.NewLuaScript(luascripts.Acquire)
	extendScript  = rueidis.NewLuaScript(luascripts.Extend)
	releaseScript = rueidis.NewLuaScript(luascripts.Release)
	// The keyed fast paths of Lease.Extend and Lease.Release (held.go).
	extendLeaseScript  = rueidis.NewLuaScript(luascripts.ExtendLease)
	releaseLeaseScript = rueidis.NewLuaScript(luascripts.ReleaseLease)
	rollbackScript     = rueidis.NewLuaScript(luascripts.Rollback)
	// The control plane's scripts (package fleet).
	acquireTriggerScript  = rueidis.NewLuaScript(luascripts.AcquireTrigger)
	releaseStatusScript   = rueidis.NewLuaScript(luascripts.ReleaseStatus)
	triggerAddScript      = rueidis.NewLuaScript(luascripts.TriggerAdd)
	pauseSetScript        = rueidis.NewLuaScript(luascripts.PauseSet)
	registryPublishScript = rueidis.NewLuaScript(luascripts.RegistryPublish)
	registryRefreshScript = rueidis.NewLuaScript(luascripts.RegistryRefresh)
	lookupScript          = rueidis.NewLuaScript(luascripts.Lookup)
	lookupIDScript        = rueidis.NewLuaScript(luascripts.LookupID)
	isLockedScript        = rueidis.NewLuaScript(luascripts.IsLocked)
)

// Script return codes (see internal/luascripts).
const (
	codeDone      = 1
	codeNotOwner  = 0
	codeNotFound  = -1
	codeExpired   = -2
	codeClaimed   = -3
	codeSkew      = -4
	codeElsewhere = -5 // keyed scripts: the ID's index names another data key
	codePaused    = -6
	codeNoTrigger = -7
	// codeExpiredDropped: acquire_trigger.lua dropped its bound of expired
	// triggers and more entries wait; it is called again.
	codeExpiredDropped = -8
	codeUnreadable     = -9
)

// How long each key of a lease outlives its TTL in Redis. The record (data
// key) lives exactly as long as the lease is live: TTL plus the liveness
// tolerance. The ID index lives on for the retention that lets Extend and
// Release report "expired" rather than "not found".
const (
	dataKeep  = lease.ExpiryTolerance
	indexKeep = lease.ExpiryTolerance + lease.ExpiredRetention
)

// maxRound is the largest round the scripts compare exactly (Lua numbers
// are doubles): 2^53 - 1.
const maxRound = 1<<53 - 1

// rollbackTimeout bounds the roll-back of an acquire whose outcome is
// unknown, retries included: min(ttl, rollbackTimeout).
const rollbackTimeout = 5 * time.Second

// Store is a lease.Store on Redis. It is safe for concurrent use. See the
// package documentation for what it guarantees.
type Store struct {
	client     rueidis.Client
	prefix     string
	dataPrefix string // <prefix>:{
	log        *slog.Logger
	clock      clockwork.Clock
	ack        replicaAck     // WithReplicaAck (wait.go); zero: off
	notes      *notifications // the subscriptions of waiters (notify.go)

	historyLimit int    // WithHistoryLimit
	historyLast  string // historyLimit-1, the last index LTRIM keeps
	historyMost  string // historyLimit+historySlack(historyLimit): a longer list is trimmed

	preflightOnce sync.Once // preflight.go, on the first acquire

	lists publishedLists // the job list each replica published through this Store (registry.go)
}

var _ lease.Store = (*Store)(nil)

// New returns a Store that keeps leases in Redis through client. It does
// no I/O. The client stays the caller's: close it after the last use of
// the Store. See the package documentation for recommended client options.
func New(client rueidis.Client, opts ...Option) (*Store, error) {
	if client == nil {
		return nil, opErr("New", "", fmt.Errorf("%w: client must not be nil", lease.ErrInvalidArgument))
	}
	c, err := resolve(opts)
	if err != nil {
		return nil, err
	}
	log := c.logger.With("component", "lease/redislease")
	return &Store{
		client:     client,
		prefix:     c.prefix,
		dataPrefix: c.prefix + ":{",
		log:        log,
		clock:      c.clock,
		ack:        c.ack,
		notes:      newNotifications(client, log),

		historyLimit: c.historyLimit,
		historyLast:  strconv.Itoa(c.historyLimit - 1),
		historyMost:  strconv.Itoa(c.historyLimit + historySlack(c.historyLimit)),
	}, nil
}

// Acquire makes one attempt to take the lease on key for ttl. See
// lease.Store. The returned Lease's Deadline is measured from the moment
// just before the request was sent, on the Store's clock.
//
// When the outcome is unknown (see the package documentation: a timeout,
// an abort, or a connection that broke after the request may have been
// written), or too few replicas acknowledged it (WithReplicaAck), Acquire
// rolls the attempt back before it returns the error: it releases the
// lease if the attempt took it and gives back the round it claimed, with a
// fresh context bounded by min(ttl, 5s), retrying transient errors. So an
// attempt that failed neither blocks the key until its TTL nor uses up its
// occurrence.
func (s *Store) Acquire(ctx context.Context, key string, ttl time.Duration, opts ...lease.AcquireOption) (*lease.Lease, error) {
	a, err := s.newAcquire(key, ttl, opts)
	if err != nil {
		return nil, err
	}
	s.preflightOnce.Do(func() { s.preflight(ctx) })
	switch {
	case a.o.Trigger:
		return s.acquireTrigger(ctx, a.ks, a.ik, a.id, ttl, a.nkey, a.owner, a.ownerJSON, a.o.PauseCheck)
	case a.o.Resume > 0:
		return s.acquireResume(ctx, a.ks, a.ik, a.id, ttl, a.nkey, a.owner, a.ownerJSON, a.o)
	}
	keys, args := s.keysArgs(&a)
	sent := s.clock.Now()
	return s.acquireAnswer(ctx, a, sent, s.execAcquire(ctx, keys, args))
}

// acquireCall is one acquire, checked and ready to send.
type acquireCall struct {
	nkey             string
	ttl              time.Duration
	o                lease.AcquireOptions
	ks               keyset
	owner, ownerJSON string
	id, ik           string // the new lease's ID and its index key
}

// newAcquire checks an acquire's arguments (no I/O) and draws its lease ID.
func (s *Store) newAcquire(key string, ttl time.Duration, opts []lease.AcquireOption) (acquireCall, error) {
	const op = "acquire"
	nkey, err := lease.NormalizeKey(key)
	if err != nil {
		return acquireCall{}, opErr(op, "", err)
	}
	if err := lease.ValidateTTL(ttl); err != nil {
		return acquireCall{}, opErr(op, "", err)
	}
	o, err := lease.ResolveAcquireOptions(opts)
	if err != nil {
		return acquireCall{}, opErr(op, "", err)
	}
	if o.Round > maxRound {
		return acquireCall{}, opErr(op, "", fmt.Errorf("%w: round must be at most %d, got %d", lease.ErrInvalidArgument, int64(maxRound), o.Round))
	}
	ks, err := keysFor(s.prefix, nkey)
	if err != nil {
		return acquireCall{}, opErr(op, "", err)
	}
	a := acquireCall{nkey: nkey, ttl: ttl, o: o, ks: ks, owner: o.Owner, ownerJSON: ownerJSONOf(o.Owner)}
	a.id, a.ik = newLeaseID(s.prefix, ks.slot)
	return a, nil
}

// keysArgs returns the acquire script's keys and arguments for a (with
// its completion record's when a carries lease.WithAttempts).
func (s *Store) keysArgs(a *acquireCall) (keys, args []string) {
	pause := "" // KEYS[5] only when the acquire honours a pause
	if a.o.PauseCheck {
		pause = a.ks.pause(s.prefix)
	}
	keys, args = acquireKeysArgs(a.ks, a.ik, pause, a.id, a.ttl, a.nkey, a.ownerJSON, a.o)
	if a.o.Attempts.Max > 0 {
		keys, args = s.attemptsKeysArgs(a.ks, keys, args, a.o)
	}
	return keys, args
}

// acquireAnswer reads the acquire script's reply resp to a, sent at sent,
// rolling the attempt back when its outcome is unknown.
func (s *Store) acquireAnswer(ctx context.Context, a acquireCall, sent time.Time, resp rueidis.RedisResult) (*lease.Lease, error) {
	m, err := resp.ToMessage()
	return s.acquireAnswerMessage(ctx, a, sent, &m, err)
}

// acquireAnswerMessage is acquireAnswer for the reply m, or err when the
// acquire's call failed (or m is an error reply).
func (s *Store) acquireAnswerMessage(ctx context.Context, a acquireCall, sent time.Time, m *rueidis.RedisMessage, err error) (*lease.Lease, error) {
	const op = "acquire"
	ks, o := a.ks, a.o
	if err == nil {
		err = m.Error()
	}
	if err != nil {
		name := keyName(ks)
		if errors.Is(err, errReplicaAck) || outcomeUnknown(ctx, err) {
			s.rollback(ctx, ks, a.ik, a.id, o.Round, 0, a.ttl, name)
		}
		return nil, wrapErr(ctx, op, name, err)
	}
	r, err := intsMessage(m)
	if err != nil {
		return nil, internalErr(op, keyName(ks), err)
	}
	v := r.v
	switch {
	case r.acquired():
		// checked below
	case r.n == 2 && v[0] == 0:
		return nil, opErr(op, keyName(ks), &lease.LockedError{Remaining: time.Duration(v[1]) * time.Millisecond})
	case r.is(codeClaimed):
		return nil, opErr(op, keyName(ks), fmt.Errorf("%w: round %d", lease.ErrRoundClaimed, o.Round))
	case r.is(codeSkew):
		return nil, opErr(op, keyName(ks), fmt.Errorf("%w: round %d is more than %s ahead of server time", lease.ErrClockSkew, o.Round, o.MaxSkew))
	case r.is(codePaused):
		return nil, opErr(op, keyName(ks), lease.ErrPaused)
	case r.n == 3 && r.v[0] == codePaused:
		return nil, opErr(op, keyName(ks), pausedError(r.v[1], r.v[2]))
	case r.is(codeUnreadable):
		return nil, internalErr(op, keyName(ks), errUnreadable)
	default:
		return nil, internalErr(op, keyName(ks), r.bad())
	}
	fence, err := checkFence(v[1])
	if err != nil {
		// The lease was taken but its token is unusable: give it back.
		name := keyName(ks)
		s.rollback(ctx, ks, a.ik, a.id, o.Round, 0, a.ttl, name)
		return nil, internalErr(op, name, err)
	}
	s.warnFence(keyName(ks), fence, time.UnixMilli(v[3]))
	l := &lease.Lease{
		Key:        a.nkey,
		ID:         a.id,
		Fence:      fence,
		Owner:      a.owner,
		TTL:        a.ttl,
		AcquiredAt: time.UnixMilli(v[3]),
		ExpiresAt:  time.UnixMilli(v[2]),
		Round:      o.Round,
		PrevRound:  prevRound(o.Round, v[4]),
		Attempt:    1,
		Deadline:   lease.LocalDeadline(sent, a.ttl),
	}
	if o.Attempts.Max > 0 {
		l.Attempts = lease.Attempts{Max: o.Attempts.Max, Deadline: time.UnixMilli(o.Attempts.Deadline.UnixMilli())}
		if r.n == 7 {
			l.Superseded = &lease.Superseded{Round: v[5], Attempt: int(v[6])}
			s.pushGivenUp(ctx, ks, keyName(ks), v[5], int(v[6]), time.UnixMilli(v[3]))
		}
	}
	return lease.Attach(s, l), nil
}

// prevRound is Lease.PrevRound: the round recorded before the acquire, for
// an acquire that claimed a round, else 0.
func prevRound(round, recorded int64) int64 {
	if round == 0 {
		return 0
	}
	return recorded
}

// warnFence logs a fence past fenceWarn (the year 2239 on the fence floor),
// or further ahead of the fence floor at the acquire's server time than
// fenceAhead: such a counter, if lost with the data, would resume below it.
func (s *Store) warnFence(what string, fence fencing.Token, acquiredAt time.Time) {
	switch {
	case fence > fenceWarn:
		s.log.Warn("fence counter nearing its limit", "key", what, "fence", fence, "limit", fencing.Token(fenceMax))
	case fence > lease.FenceFloor(acquiredAt)+fenceAhead:
		s.log.Warn("fence counter runs ahead of the server clock's floor; if the store lost its data, fences would go back",
			"key", what, "fence", fence, "floor", lease.FenceFloor(acquiredAt))
	}
}

// keyName names a lease key in errors and logs without revealing it:
// "key#" and the first 8 characters of leasekit.Hash of its storage key. It
// hashes, so only error and log paths call it.
func keyName(ks keyset) string {
	return "key#" + leasekit.Hash(ks.storage)[:8]
}

// rollback undoes an acquire of ks by id, which claimed round (0: none)
// or resumed an occurrence (resumed: its round, else 0), whose outcome is
// unknown or that must not stand (rollback.lua): it releases the lease if
// the acquire took it and gives back its round if that is still the
// recorded one, or sets a resumed occurrence's record back to open at the
// attempt before. It uses a fresh context bounded by
// min(ttl, rollbackTimeout), retries transient errors, and only logs what
// happened.
func (s *Store) rollback(ctx context.Context, ks keyset, index, id string, round, resumed int64, ttl time.Duration, what string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(ttl, rollbackTimeout))
	defer cancel()
	head := recordHeadOpen + id + recordHeadClose
	keys, args := []string{ks.data, index, ks.round}, []string{head, strconv.FormatInt(round, 10)}
	if resumed > 0 {
		keys, args = append(keys, ks.attempt(s.prefix)), append(args, strconv.FormatInt(resumed, 10))
	}
	var code int64
	attempts, err := retry.Do(rctx, func(ctx context.Context) error {
		resp := rollbackScript.Exec(ctx, s.client, keys, args)
		if err := resp.Error(); err != nil {
			return wrapErr(ctx, "rollback", what, err)
		}
		r, err := intsReply(resp)
		if err != nil || r.n != 1 || r.v[0] < 0 || r.v[0] > 2 {
			return internalErr("rollback", what, fmt.Errorf("%w: %v", errBadReply, r.v[:r.n]))
		}
		code = r.v[0]
		return nil
	}, nil)
	attrs := []any{"key", what, "lease", lease.ShortID(id), "attempts", attempts}
	switch {
	case err != nil:
		s.log.Warn("could not roll back an acquire whose outcome was unknown; the key may stay locked until the ttl passes and its occurrence be lost",
			append(attrs, "error", err)...)
	case code == 2:
		s.log.Warn("rolled back an acquire whose outcome was unknown: lease released, round given back", attrs...)
	case code == 1:
		s.log.Warn("rolled back an acquire whose outcome was unknown: lease released", attrs...)
	default:
		s.log.Debug("acquire whose outcome was unknown did not take effect", attrs...)
	}
}

// pausedError is the error of an acquire refused as paused that recorded
// its round: prev, the round recorded before it, and atMs, the pause's
// time (0 or less: unknown).
func pausedError(prev, atMs int64) *lease.PausedError {
	e := &lease.PausedError{PrevRound: max(prev, 0)}
	if atMs > 0 {
		e.PausedAt = time.UnixMilli(atMs)
	}
	return e
}

// reply is a script reply of at most eight integers: a single integer has
// n == 1.
type reply struct {
	n int
	v [8]int64
}

// acquired reports whether the reply is an acquire script's success:
// {1, fence, expiresAtMs, acquiredAtMs, prevRound}, or with attempts
// {1, fence, expiresAtMs, acquiredAtMs, prevRound, supersededRound,
// supersededAttempt}.
func (r reply) acquired() bool { return (r.n == 5 || r.n == 7) && r.v[0] == 1 }

// is reports whether the reply is the single integer code.
func (r reply) is(code int64) bool { return r.n == 1 && r.v[0] == code }

// bad returns the error for a reply no caller expects.
func (r reply) bad() error {
	return fmt.Errorf("%w: %v", errBadReply, r.v[:r.n])
}

// intsReply reads a script reply that is an integer or an array of at most
// eight integers, without allocating.
func intsReply(resp rueidis.RedisResult) (reply, error) {
	m, err := resp.ToMessage()
	if err != nil {
		return reply{}, err
	}
	return intsMessage(&m)
}

// intsMessage is intsReply for a message already read (an element of a
// batch's reply).
func intsMessage(m *rueidis.RedisMessage) (reply, error) {
	if err := m.Error(); err != nil {
		return reply{}, err
	}
	if m.IsInt64() {
		n, _ := m.AsInt64()
		return reply{n: 1, v: [8]int64{n}}, nil
	}
	if !m.IsArray() {
		return reply{}, fmt.Errorf("%w: neither integer nor array", errBadReply)
	}
	arr, _ := m.ToArray()
	if len(arr) > len(reply{}.v) {
		return reply{}, fmt.Errorf("%w: array of %d elements", errBadReply, len(arr))
	}
	r := reply{n: len(arr)}
	for i := range arr {
		if !arr[i].IsInt64() {
			return reply{}, fmt.Errorf("%w: array element %d is not an integer", errBadReply, i)
		}
		r.v[i], _ = arr[i].AsInt64()
	}
	return r, nil
}

// acquireKeysArgs builds the acquire script's KEYS and ARGV (see
// acquire.lua) with two allocations: one backing array for both slices and
// one string that the numeric and record arguments are slices of. pause is
// the pause key, or "" for an acquire that does not honour a pause: then
// KEYS has four keys, and the script builds one string and one table slot
// less; a plain acquire (no round, no pause) sends three keys and five
// arguments (about 820 instructions of Redis's per argument on Redis 7.0).
func acquireKeysArgs(ks keyset, ik, pause, id string, ttl time.Duration, key, ownerJSON string, o lease.AcquireOptions) (keys, args []string) {
	ttlMs := ttl.Milliseconds()
	var b strings.Builder
	b.Grow(5*20 + len(key) + len(ownerJSON) + len(`"key":,"owner":}`))
	var num [20]byte
	var ends [6]int
	writeInt := func(i int, n int64) {
		b.Write(strconv.AppendInt(num[:0], n, 10))
		ends[i] = b.Len()
	}
	writeInt(0, ttlMs)
	writeInt(1, ttlMs+dataKeep.Milliseconds())
	writeInt(2, ttlMs+indexKeep.Milliseconds())
	writeRecordTail(&b, key, ownerJSON)
	ends[3] = b.Len()
	writeInt(4, o.Round)
	writeInt(5, o.MaxSkew.Milliseconds())
	all := b.String()
	kv := []string{
		ks.data, ik, ks.fence, ks.round, pause,
		id, all[:ends[0]], all[ends[0]:ends[1]], all[ends[1]:ends[2]],
		all[ends[2]:ends[3]], all[ends[3]:ends[4]], all[ends[4]:ends[5]],
	}
	if pause == "" && o.Round == 0 {
		return kv[:3:3], kv[5:10]
	}
	if pause == "" {
		return kv[:4:4], kv[5:]
	}
	return kv[:5:5], kv[5:]
}
