package redislease

import (
	"context"
	"errors"
	"slices"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/internal/luascripts"
	"github.com/cronguard/cronguard/lease"
)

// releaseBatchSHA is the SHA-1 of the batch release script, for EVALSHA.
var releaseBatchSHA = scriptSHA(luascripts.ReleaseBatch)

// releaseChunk is one call of release_batch.lua: calls[from:to], of one
// shape (with attempts or without), no lease key twice.
type releaseChunk struct {
	from, to   int
	keys, args []string // the call's KEYS, and its ARGV after the count and the history's bounds
}

// releaseChunks makes calls with release_batch.lua, in chunks of one shape
// and up to batchMax releases, each chunk followed by the index commands of
// its leases with attempts, all in one pipeline, and writes each answer to
// triggers and errs at the call's entry.
func (s *Store) releaseChunks(ctx context.Context, calls []releaseCall, leases []*lease.Lease, sts []fleet.Status, triggers []int, errs []error) {
	chunks := chunkReleases(calls)
	cmds := make(rueidis.Commands, 0, len(chunks)+len(calls))
	at := make([]int, len(chunks)) // at[n]: the script of chunks[n] in cmds; its index commands follow it
	for n, ch := range chunks {
		at[n] = len(cmds)
		cmds = append(cmds, s.evalReleaseBatch(releaseBatchSHA, "", ch))
		for _, c := range calls[ch.from:ch.to] {
			if c.withAttempts {
				cmds = append(cmds, s.indexCmd(leases[c.i], sts[c.i]))
			}
		}
	}
	// A script the server did not have is sent again by its source; the
	// index commands beside it were carried out the first time.
	resps := s.doScripts(ctx, cmds, func(k int) rueidis.Completed {
		// only a script answers NOSCRIPT: k is in at
		return s.evalReleaseBatch("", luascripts.ReleaseBatch, chunks[slices.Index(at, k)])
	})
	for n, ch := range chunks {
		script := resps[at[n]]
		next := at[n] + 1
		for _, c := range calls[ch.from:ch.to] {
			if c.withAttempts {
				s.indexAnswer(resps[next], script.Error())
				next++
			}
		}
		s.releaseChunkAnswers(ctx, calls, leases, triggers, errs, ch, script)
	}
}

// chunkReleases cuts calls, in order, into chunks: a new one starts at a
// call of the other shape, at a lease key the chunk has, and after
// batchMax.
func chunkReleases(calls []releaseCall) []releaseChunk {
	var chunks []releaseChunk
	var cur *releaseChunk
	var attempts bool
	inChunk := make(map[string]bool, min(len(calls), batchMax))
	for k, c := range calls {
		if cur == nil || c.withAttempts != attempts || inChunk[c.keys[0]] || cur.to-cur.from == batchMax {
			chunks = append(chunks, releaseChunk{from: k, to: k})
			cur = &chunks[len(chunks)-1]
			attempts = c.withAttempts
			clear(inChunk)
		}
		inChunk[c.keys[0]] = true
		cur.keys = append(cur.keys, c.keys...)
		// release_status.lua's ARGV but the history's bounds (ARGV[3],
		// ARGV[4]), which the batch gives once
		cur.args = append(cur.args, c.args[:2]...)
		cur.args = append(cur.args, c.args[4:]...)
		cur.to++
	}
	return chunks
}

// evalReleaseBatch builds EVALSHA sha for chunk c, or EVAL src when sha
// is "".
func (s *Store) evalReleaseBatch(sha, src string, c releaseChunk) rueidis.Completed {
	count := strconv.Itoa(c.to - c.from)
	if sha != "" {
		return s.client.B().Evalsha().Sha1(sha).Numkeys(int64(len(c.keys))).Key(c.keys...).
			Arg(count, s.historyLast, s.historyMost).Arg(c.args...).Build()
	}
	return s.client.B().Eval().Script(src).Numkeys(int64(len(c.keys))).Key(c.keys...).
		Arg(count, s.historyLast, s.historyMost).Arg(c.args...).Build()
}

// releaseChunkAnswers reads the reply resp of chunk ch: one answer per
// release, each read as releaseAnswer reads release_status.lua's. A call
// that failed fails each of its releases; so does a reply that does not
// have one element per release.
func (s *Store) releaseChunkAnswers(ctx context.Context, calls []releaseCall, leases []*lease.Lease, triggers []int, errs []error, ch releaseChunk, resp rueidis.RedisResult) {
	m, arr, err := batchReply(resp, ch.to-ch.from, "releases")
	for k := ch.from; k < ch.to; k++ {
		c := calls[k]
		l := leases[c.i]
		switch {
		case errors.Is(err, errBadReply):
			triggers[c.i], errs[c.i] = 0, internalErr("release", leaseName(l.ID), err)
			continue
		case err != nil:
			triggers[c.i], errs[c.i] = s.releaseAnswerMessage(ctx, l, c.withAttempts, &m, err)
			continue
		}
		triggers[c.i], errs[c.i] = s.releaseAnswerMessage(ctx, l, c.withAttempts, &arr[k-ch.from], nil)
	}
}
