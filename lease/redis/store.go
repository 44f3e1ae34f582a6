package redis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/redis/rueidis"

	"github.com/cronguard/cronguard/internal/luascripts"
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
	lookupScript       = rueidis.NewLuaScript(luascripts.Lookup)
	lookupIDScript     = rueidis.NewLuaScript(luascripts.LookupID)
	isLockedScript     = rueidis.NewLuaScript(luascripts.IsLocked)
)

// Script return codes (see internal/luascripts).
const (
	codeDone       = 1
	codeNotOwner   = 0
	codeNotFound   = -1
	codeExpired    = -2
	codeClaimed    = -3
	codeSkew       = -4
	codeElsewhere  = -5 // keyed scripts: the ID's index names another data key
	codeUnreadable = -9
)

// keepExtra is how long a record outlives its TTL in Redis: the liveness
// tolerance plus the retention that lets Extend and Release report
// "expired" rather than "not found".
const keepExtra = lease.ExpiryTolerance + lease.ExpiredRetention

// maxRound is the largest round the scripts compare exactly (Lua numbers
// are doubles): 2^53 - 1.
const maxRound = 1<<53 - 1

// reconcileTimeout bounds the clean-up after an acquire whose outcome is
// unknown.
const reconcileTimeout = 2 * time.Second

// Store is a lease.Store on Redis. It is safe for concurrent use. See the
// package documentation for what it guarantees.
type Store struct {
	client     rueidis.Client
	prefix     string
	dataPrefix string // <prefix>:{
	owner      string
	cleanup    bool
	log        *slog.Logger
	clock      clockwork.Clock
	ack        replicaAck // WithReplicaAck (wait.go); zero: off
}

var _ lease.Store = (*Store)(nil)

// New returns a Store that keeps leases in Redis through client. It does
// no I/O. The client stays the caller's: close it after the last use of
// the Store. See the package documentation for recommended client options.
func New(client rueidis.Client, opts ...Option) (*Store, error) {
	if client == nil {
		return nil, fmt.Errorf("lease/redis: New: %w: client must not be nil", lease.ErrInvalidArgument)
	}
	c, err := resolve(opts)
	if err != nil {
		return nil, err
	}
	return &Store{
		client:     client,
		prefix:     c.prefix,
		dataPrefix: c.prefix + ":{",
		owner:      c.owner,
		cleanup:    c.cleanup,
		log:        c.logger.With("component", "lease/redis"),
		clock:      c.clock,
		ack:        c.ack,
	}, nil
}

// Acquire makes one attempt to take the lease on key for ttl. See
// lease.Store. The returned Lease's Deadline is measured from the moment
// just before the request was sent, on the Store's clock.
//
// When the call fails with ErrTimeout or ErrAborted the acquire may still
// have happened on the server; Acquire then releases the lease by its ID
// with a fresh, bounded context before it returns the error, so an
// ambiguous attempt does not block the key until the TTL passes.
func (s *Store) Acquire(ctx context.Context, key string, ttl time.Duration, opts ...lease.AcquireOption) (*lease.Lease, error) {
	const op = "acquire"
	nkey, err := lease.NormalizeKey(key)
	if err != nil {
		return nil, fmt.Errorf("lease/redis: %s: %w", op, err)
	}
	if err := lease.ValidateTTL(ttl); err != nil {
		return nil, fmt.Errorf("lease/redis: %s: %w", op, err)
	}
	o, err := lease.ResolveAcquireOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("lease/redis: %s: %w", op, err)
	}
	if o.Round > maxRound {
		return nil, fmt.Errorf("lease/redis: %s: %w: round must be at most %d, got %d", op, lease.ErrInvalidArgument, int64(maxRound), o.Round)
	}
	ks, err := keysFor(s.prefix, nkey)
	if err != nil {
		return nil, fmt.Errorf("lease/redis: %s: %w", op, err)
	}
	owner := s.owner
	if o.Owner != "" {
		owner = o.Owner
	}
	id := newID(ks.slot)
	ttlMs := ttl.Milliseconds()
	args := []string{
		id,
		strconv.FormatInt(ttlMs, 10),
		strconv.FormatInt(ttlMs+keepExtra.Milliseconds(), 10),
		recordTail(nkey, owner),
		strconv.FormatInt(o.Round, 10),
		strconv.FormatInt(o.MaxSkew.Milliseconds(), 10),
	}
	sent := s.clock.Now()
	resp := s.execAcquire(ctx, []string{ks.data, indexPrefix(s.prefix, ks.slot) + id, ks.fence, ks.round}, args)
	if err := resp.Error(); err != nil {
		name := keyName(ks)
		err = wrapErr(ctx, op, name, err)
		if isAmbiguous(err) {
			s.reconcile(ctx, id, name)
		}
		return nil, err
	}
	v, err := intsReply(resp)
	if err != nil {
		return nil, internalErr(op, keyName(ks), err)
	}
	switch {
	case len(v) == 4 && v[0] == 1:
		// acquired; checked below
	case len(v) == 2 && v[0] == 0:
		return nil, fmt.Errorf("lease/redis: %s %s: %w", op, keyName(ks), &lease.LockedError{Remaining: time.Duration(v[1]) * time.Millisecond})
	case len(v) == 1 && v[0] == codeClaimed:
		return nil, fmt.Errorf("lease/redis: %s %s: %w: round %d", op, keyName(ks), lease.ErrRoundClaimed, o.Round)
	case len(v) == 1 && v[0] == codeSkew:
		return nil, fmt.Errorf("lease/redis: %s %s: %w: round %d is more than %s ahead of server time", op, keyName(ks), lease.ErrClockSkew, o.Round, o.MaxSkew)
	case len(v) == 1 && v[0] == codeUnreadable:
		return nil, internalErr(op, keyName(ks), errUnreadable)
	default:
		return nil, internalErr(op, keyName(ks), fmt.Errorf("%w: %v", errBadReply, v))
	}
	fence, err := checkFence(v[1])
	if err != nil {
		// The lease was taken but its token is unusable: give it back.
		name := keyName(ks)
		s.reconcile(ctx, id, name)
		return nil, internalErr(op, name, err)
	}
	if v[1] > fenceWarn {
		s.log.Warn("fence counter nearing its limit", "key", keyName(ks), "fence", v[1], "limit", int64(fenceMax))
	}
	return lease.Attach(s, &lease.Lease{
		Key:        nkey,
		ID:         id,
		Fence:      fence,
		Owner:      owner,
		TTL:        ttl,
		AcquiredAt: time.UnixMilli(v[3]),
		ExpiresAt:  time.UnixMilli(v[2]),
		Deadline:   lease.LocalDeadline(sent, ttl),
	}), nil
}

// keyName names a lease key in errors and logs without revealing it:
// "key#" and the first 8 characters of lease.Hash of its storage key. It
// hashes, so only error and log paths call it.
func keyName(ks keyset) string {
	return "key#" + lease.Hash(ks.storage)[:8]
}

// isAmbiguous reports whether a failed call may still have run on the
// server.
func isAmbiguous(err error) bool {
	return errors.Is(err, lease.ErrTimeout) || errors.Is(err, lease.ErrAborted)
}

// reconcile releases the lease with id, if the ambiguous acquire that
// generated it took effect. It uses a fresh context bounded by
// reconcileTimeout, and only logs what happened.
func (s *Store) reconcile(ctx context.Context, id, what string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reconcileTimeout)
	defer cancel()
	err := s.Release(rctx, id)
	switch {
	case err == nil:
		s.log.Warn("rolled back an acquire whose outcome was unknown", "key", what, "lease", lease.ShortID(id))
	case errors.Is(err, lease.ErrNotHeld):
		s.log.Debug("ambiguous acquire did not take effect", "key", what, "lease", lease.ShortID(id))
	default:
		s.log.Warn("could not roll back an acquire whose outcome was unknown; the key may stay locked until the ttl passes",
			"key", what, "lease", lease.ShortID(id), "err", err)
	}
}

// intsReply reads a script reply that is an integer or an array of
// integers.
func intsReply(resp rueidis.RedisResult) ([]int64, error) {
	m, err := resp.ToMessage()
	if err != nil {
		return nil, err
	}
	if m.IsInt64() {
		n, _ := m.AsInt64()
		return []int64{n}, nil
	}
	if !m.IsArray() {
		return nil, fmt.Errorf("%w: neither integer nor array", errBadReply)
	}
	arr, _ := m.ToArray()
	out := make([]int64, len(arr))
	for i := range arr {
		if !arr[i].IsInt64() {
			return nil, fmt.Errorf("%w: array element %d is not an integer", errBadReply, i)
		}
		out[i], _ = arr[i].AsInt64()
	}
	return out, nil
}
