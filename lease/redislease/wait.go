package redislease

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/cronguard/cronguard/internal/luascripts"
	"github.com/cronguard/cronguard/lease"
)

// replicaAck is the resolved WithReplicaAck setting; the zero value is off.
type replicaAck struct {
	replicas int
	timeout  time.Duration
}

// errReplicaAck is the cause when fewer replicas than WithReplicaAck asks
// for confirmed an acquire in time. It is classified as
// lease.ErrUnavailable.
var errReplicaAck = errors.New("replicas did not acknowledge the acquire in time")

// acquireSHA is the SHA-1 of the acquire script, for EVALSHA.
var acquireSHA = scriptSHA(luascripts.Acquire)

// scriptSHA returns the SHA-1 of a script's source, hex, as EVALSHA names
// it.
func scriptSHA(src string) string {
	sum := sha1.Sum([]byte(src))
	return hex.EncodeToString(sum[:])
}

// WithReplicaAck makes every successful Acquire wait, with Redis's WAIT
// command on the same connection as the acquire script, until at least
// replicas replicas have acknowledged the acquire's writes, for at most
// timeout (default: off, Acquire returns as soon as the primary answers).
// replicas must be at least 1; timeout must be a positive whole number of
// milliseconds.
//
// When fewer replicas confirm in time, Acquire rolls the acquire back (it
// releases the lease it just took and gives back the round it claimed, so
// that another replica can still run that occurrence; best effort, with a
// fresh context bounded by min(ttl, 5s)) and fails with
// lease.ErrUnavailable naming the shortfall; no fencing token is handed
// out. So a token that Acquire returns has reached at least replicas
// replicas, and a failover to one of them cannot make the key's fence
// counter go back below it. WAIT does not make Redis strongly consistent:
// Sentinel or Cluster may still promote a replica that had not
// acknowledged, and the lease itself (not its fence) can still be lost in
// a failover. The Redis user needs the wait permission (ACL +wait); when
// WAIT is refused, the acquire is rolled back the same way and Acquire
// fails with lease.ErrAuth.
func WithReplicaAck(replicas int, timeout time.Duration) Option {
	return func(c *config) error {
		if replicas < 1 {
			return opErr("WithReplicaAck", "", fmt.Errorf("%w: replicas must be at least 1, got %d", lease.ErrInvalidArgument, replicas))
		}
		if timeout < time.Millisecond || timeout%time.Millisecond != 0 {
			return opErr("WithReplicaAck", "", fmt.Errorf("%w: timeout must be a positive whole number of milliseconds, got %s", lease.ErrInvalidArgument, timeout))
		}
		c.ack = replicaAck{replicas: replicas, timeout: timeout}
		return nil
	}
}

// execAcquire runs the acquire script. With WithReplicaAck it sends the
// script and WAIT together (rueidis sends a batch that holds a blocking
// command on one dedicated connection, and in a cluster to the node of the
// script's keys), and turns an acquire that was not acknowledged by enough
// replicas into an errReplicaAck error, which Acquire rolls back.
func (s *Store) execAcquire(ctx context.Context, keys, args []string) rueidis.RedisResult {
	return s.execAcquireWith(ctx, acquireScript, acquireSHA, luascripts.Acquire, keys, args)
}

// execAcquireWith is execAcquire for any script that takes a lease and
// answers acquire.lua's success ({1, fence, ...}): script, its SHA-1 and
// its source.
func (s *Store) execAcquireWith(ctx context.Context, script *rueidis.Lua, sha, src string, keys, args []string) rueidis.RedisResult {
	if s.ack.replicas == 0 {
		return script.Exec(ctx, s.client, keys, args)
	}
	res := s.client.DoMulti(ctx, s.evalAcquire(sha, "", keys, args), s.waitCmd())
	if isNoScript(res[0].Error()) {
		res = s.client.DoMulti(ctx, s.evalAcquire("", src, keys, args), s.waitCmd())
	}
	if res[0].Error() != nil || !acquiredReply(res[0]) {
		return res[0] // failed, locked, claimed: nothing was written to wait for
	}
	acked, err := res[1].AsInt64()
	if err != nil && ctx.Err() != nil {
		// The outcome is unknown to the caller: Acquire rolls it back.
		return rueidis.NewErrorResult(err)
	}
	if err == nil && acked >= int64(s.ack.replicas) {
		return res[0]
	}
	// Acquire rolls the lease back (released, round given back): no token
	// that too few replicas have is handed out.
	if err != nil {
		return rueidis.NewErrorResult(fmt.Errorf("%w: WAIT failed: %w", errReplicaAck, err))
	}
	return rueidis.NewErrorResult(fmt.Errorf("%w: %d of %d replicas within %s", errReplicaAck, acked, s.ack.replicas, s.ack.timeout))
}

// evalAcquire builds EVALSHA sha, or EVAL src when sha is "".
func (s *Store) evalAcquire(sha, src string, keys, args []string) rueidis.Completed {
	if sha != "" {
		return s.client.B().Evalsha().Sha1(sha).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	}
	return s.client.B().Eval().Script(src).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

func (s *Store) waitCmd() rueidis.Completed {
	return s.client.B().Wait().Numreplicas(int64(s.ack.replicas)).Timeout(s.ack.timeout.Milliseconds()).Build()
}

// acquiredReply reports whether an acquire script reply says the lease was
// taken: {1, fence, expiresAtMs, acquiredAtMs, ...} of five or seven
// integers (acquire.lua, acquire_resume.lua).
func acquiredReply(resp rueidis.RedisResult) bool {
	r, err := intsReply(resp)
	return err == nil && r.acquired()
}

func isNoScript(err error) bool {
	var re *rueidis.RedisError
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "NOSCRIPT")
}
