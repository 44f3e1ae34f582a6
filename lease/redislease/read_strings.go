package redislease

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/cronguard/cronguard/lease"
)

// errBadRead is the cause of a reply to a read that is not what its
// command answers.
var errBadRead = errors.New("unexpected reply to a read")

// mgetChunk is the most keys one MGET of readStrings reads: it bounds how
// long one command holds the server.
const mgetChunk = 256

// readStrings reads, for each key of keys, the string at the Redis key
// name gives from its keyset (the reads of LastRounds and LastRuns), and
// calls each(i, v, found, err) for key i, in order: found is false when
// the Redis key does not exist, and err is set (WRONGTYPE) when it holds
// another type and the server said so.
//
// A server that is not a Redis Cluster is read with MGET, mgetChunk keys
// per command: one command instead of one per key, which spares the
// server a command's dispatch and reply per key, and the client a command
// per key. MGET answers nil for a key of another type, which then reads
// as absent, as the acquire script's MGET reads it. A Cluster is read with
// one pipelined GET per key: the keys hash to different slots.
//
// A key that is not valid fails the call before any I/O. An error of the
// whole read (the connection, ctx) is returned, as is a reply that is not
// what MGET answers; each has then been called for some keys, or none.
func (s *Store) readStrings(ctx context.Context, op string, keys []string, name func(keyset) string, each func(i int, v string, found bool, err error)) error {
	names := make([]string, len(keys))
	for i, k := range keys {
		nkey, err := lease.NormalizeKey(k)
		if err != nil {
			return opErr(op, "", err)
		}
		ks, err := keysFor(s.prefix, nkey)
		if err != nil {
			return opErr(op, "", err)
		}
		names[i] = name(ks)
	}
	if len(names) == 0 {
		return nil
	}
	if s.client.Mode() == rueidis.ClientModeCluster {
		return s.readStringsOneByOne(ctx, op, names, each)
	}
	b := s.client.B()
	cmds := make(rueidis.Commands, 0, (len(names)+mgetChunk-1)/mgetChunk)
	for from := 0; from < len(names); from += mgetChunk {
		cmds = append(cmds, b.Mget().Key(names[from:min(from+mgetChunk, len(names))]...).Build())
	}
	for c, resp := range s.client.DoMulti(ctx, cmds...) {
		from := c * mgetChunk
		want := min(mgetChunk, len(names)-from)
		vs, err := resp.ToArray()
		if err != nil {
			return wrapErr(ctx, op, "", err)
		}
		if len(vs) != want {
			return internalErr(op, "", fmt.Errorf("%w: MGET of %d keys answered %d values", errBadRead, want, len(vs)))
		}
		for n, m := range vs {
			v, err := m.ToString()
			switch {
			case rueidis.IsRedisNil(err):
				each(from+n, "", false, nil)
			case err != nil:
				return internalErr(op, "", fmt.Errorf("%w: MGET answered a value that is not a string: %w", errBadRead, err))
			default:
				each(from+n, v, true, nil)
			}
		}
	}
	return nil
}

// readStringsOneByOne is readStrings with one pipelined GET per key.
func (s *Store) readStringsOneByOne(ctx context.Context, op string, names []string, each func(i int, v string, found bool, err error)) error {
	b := s.client.B()
	cmds := make(rueidis.Commands, len(names))
	for i, n := range names {
		cmds[i] = b.Get().Key(n).Build()
	}
	for i, resp := range s.client.DoMulti(ctx, cmds...) {
		v, err := resp.ToString()
		switch {
		case rueidis.IsRedisNil(err):
			each(i, "", false, nil)
		case wrongType(err):
			each(i, "", false, err)
		case err != nil:
			return wrapErr(ctx, op, "", err)
		default:
			each(i, v, true, nil)
		}
	}
	return nil
}
