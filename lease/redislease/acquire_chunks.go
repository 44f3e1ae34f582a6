package redislease

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/cronguard/cronguard/internal/luascripts"
	"github.com/cronguard/cronguard/lease"
)

// acquireBatchSHA is the SHA-1 of the batch acquire script, for EVALSHA.
var acquireBatchSHA = scriptSHA(luascripts.AcquireBatch)

// batchMax is the most acquires one call of acquire_batch.lua makes: a
// call holds the server for about 7 µs per acquire, so a batch of the
// scheduler's (up to 64 claims) is one call.
const batchMax = 64

// acquireChunk is one call of acquire_batch.lua: calls[from:to], of one
// shape (as many keys and arguments each), no lease key twice.
type acquireChunk struct {
	from, to   int
	keys, args []string // the call's KEYS, and its ARGV after the count
}

// acquireChunks makes calls with acquire_batch.lua, in chunks of one shape
// and up to batchMax acquires, all in one pipeline, and writes each
// answer to results[at[k]].
func (s *Store) acquireChunks(ctx context.Context, calls []acquireCall, at []int, results []lease.AcquireResult) {
	chunks := s.chunkAcquires(calls)
	cmds := make(rueidis.Commands, len(chunks))
	for n, c := range chunks {
		cmds[n] = s.evalAcquireBatch(acquireBatchSHA, "", c)
	}
	sent := s.clock.Now()
	resps := s.doScripts(ctx, cmds, func(n int) rueidis.Completed {
		return s.evalAcquireBatch("", luascripts.AcquireBatch, chunks[n])
	})
	for n, c := range chunks {
		s.chunkAnswers(ctx, calls, at, results, c, sent, resps[n])
	}
}

// chunkAcquires cuts calls, in order, into chunks: a new one starts at a
// call of another shape, at a lease key the chunk has, and after batchMax.
func (s *Store) chunkAcquires(calls []acquireCall) []acquireChunk {
	var chunks []acquireChunk
	var cur *acquireChunk
	var nk, na int
	inChunk := make(map[string]bool, min(len(calls), batchMax))
	for k := range calls {
		keys, args := s.keysArgs(&calls[k])
		if cur == nil || len(keys) != nk || len(args) != na || inChunk[calls[k].ks.data] || cur.to-cur.from == batchMax {
			chunks = append(chunks, acquireChunk{from: k, to: k})
			cur = &chunks[len(chunks)-1]
			nk, na = len(keys), len(args)
			clear(inChunk)
		}
		inChunk[calls[k].ks.data] = true
		cur.keys = append(cur.keys, keys...)
		cur.args = append(cur.args, args...)
		cur.to++
	}
	return chunks
}

// evalAcquireBatch builds EVALSHA sha for chunk c, or EVAL src when sha
// is "".
func (s *Store) evalAcquireBatch(sha, src string, c acquireChunk) rueidis.Completed {
	count := strconv.Itoa(c.to - c.from)
	if sha != "" {
		return s.client.B().Evalsha().Sha1(sha).Numkeys(int64(len(c.keys))).Key(c.keys...).Arg(count).Arg(c.args...).Build()
	}
	return s.client.B().Eval().Script(src).Numkeys(int64(len(c.keys))).Key(c.keys...).Arg(count).Arg(c.args...).Build()
}

// chunkAnswers reads the reply resp of chunk c, sent at sent: one answer
// per acquire, each read as acquireAnswer reads acquire.lua's. A call that
// failed fails each of its acquires (rolled back when its outcome is
// unknown); a reply that does not have one element per acquire is
// answered as unknown for each, and rolled back.
func (s *Store) chunkAnswers(ctx context.Context, calls []acquireCall, at []int, results []lease.AcquireResult, c acquireChunk, sent time.Time, resp rueidis.RedisResult) {
	// A reply of another shape is no server's error reply: each
	// acquire's outcome is unknown (outcomeUnknown), and rolled back.
	m, arr, err := batchReply(resp, c.to-c.from, "acquires")
	for k := c.from; k < c.to; k++ {
		var l *lease.Lease
		var aerr error
		if err != nil {
			l, aerr = s.acquireAnswerMessage(ctx, calls[k], sent, &m, err)
		} else {
			l, aerr = s.acquireAnswerMessage(ctx, calls[k], sent, &arr[k-c.from], nil)
		}
		results[at[k]] = lease.AcquireResult{Lease: l, Err: aerr}
	}
}

// batchReply reads the reply resp of a batch script's call of n
// operations (what names them): the message m, and one element per
// operation. A call that failed gives its error (m is its reply, if any);
// an array of another length, an error that wraps errBadReply.
func batchReply(resp rueidis.RedisResult, n int, what string) (m rueidis.RedisMessage, arr []rueidis.RedisMessage, err error) {
	m, err = resp.ToMessage()
	if err != nil {
		return m, nil, err
	}
	arr, err = m.ToArray()
	if err == nil && len(arr) != n {
		err = fmt.Errorf("%w: %d answers to %d %s", errBadReply, len(arr), n, what)
	}
	return m, arr, err
}
