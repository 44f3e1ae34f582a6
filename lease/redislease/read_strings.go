package redislease

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/rueidis"
)

// errBadRead is the cause of a reply to a read that is not what its
// command answers.
var errBadRead = errors.New("unexpected reply to a read")

// mgetChunk is the most keys one MGET of readStrings reads values for
// (each key's width of Redis keys): it bounds how long one command holds
// the server.
const mgetChunk = 256

// readStrings reads, for each key of keys, the strings at the width Redis
// keys that names appends for it from its keyset (the reads of LastRounds,
// width 1, and LastRuns, width 2: all in the key's slot), and calls
// each(i, vs, found, err) for key i, in order: vs[j] is the string at its
// j-th Redis key and found[j] false when that key does not exist (vs and
// found are reused: each must not keep them); err is set (WRONGTYPE) when
// a key of width 1 holds another type and the server said so.
//
// A server that is not a Redis Cluster is read with MGET, the Redis keys
// of mgetChunk keys per command: one command instead of one per key, which
// spares the server a command's dispatch and reply per key, and the client
// a command per key. MGET answers nil for a key of another type, which
// then reads as absent, as the acquire script's MGET reads it. A Cluster is
// read with one pipelined command per key (its keys hash to different
// slots): a GET for width 1, an MGET of its Redis keys, which share its
// slot, otherwise. An MGET reads its keys at one instant.
//
// A key that is not valid fails the call before any I/O. An error of the
// whole read (the connection, ctx) is returned, as is a reply that is not
// what the command answers; each has then been called for some keys, or
// none.
func (s *Store) readStrings(ctx context.Context, op string, keys []string, width int, names func(dst []string, ks keyset) []string,
	each func(i int, vs []string, found []bool, err error)) error {
	all := make([]string, 0, len(keys)*width)
	if err := s.eachKeyset(op, keys, func(ks keyset) { all = names(all, ks) }); err != nil {
		return err
	}
	if len(keys) == 0 {
		return nil
	}
	if s.client.Mode() == rueidis.ClientModeCluster && width == 1 {
		return s.readStringsOneByOne(ctx, op, all, each)
	}
	per := mgetChunk // keys per MGET
	if s.client.Mode() == rueidis.ClientModeCluster {
		per = 1
	}
	b := s.client.B()
	cmds := make(rueidis.Commands, 0, (len(keys)+per-1)/per)
	for from := 0; from < len(keys); from += per {
		cmds = append(cmds, b.Mget().Key(all[from*width:min(from+per, len(keys))*width]...).Build())
	}
	vs, found := make([]string, width), make([]bool, width)
	for c, resp := range s.client.DoMulti(ctx, cmds...) {
		from := c * per
		want := min(per, len(keys)-from) * width
		ms, err := resp.ToArray()
		if err != nil {
			return wrapErr(ctx, op, "", err)
		}
		if len(ms) != want {
			return internalErr(op, "", fmt.Errorf("%w: MGET of %d keys answered %d values", errBadRead, want, len(ms)))
		}
		for n, m := range ms {
			j := n % width
			v, err := m.ToString()
			switch {
			case rueidis.IsRedisNil(err):
				vs[j], found[j] = "", false
			case err != nil:
				return internalErr(op, "", fmt.Errorf("%w: MGET answered a value that is not a string: %w", errBadRead, err))
			default:
				vs[j], found[j] = v, true
			}
			if j == width-1 {
				each(from+n/width, vs, found, nil)
			}
		}
	}
	return nil
}

// readStringsOneByOne is readStrings of width 1 with one pipelined GET per
// key.
func (s *Store) readStringsOneByOne(ctx context.Context, op string, names []string, each func(i int, vs []string, found []bool, err error)) error {
	b := s.client.B()
	cmds := make(rueidis.Commands, len(names))
	for i, n := range names {
		cmds[i] = b.Get().Key(n).Build()
	}
	vs, found := make([]string, 1), make([]bool, 1)
	for i, resp := range s.client.DoMulti(ctx, cmds...) {
		v, err := resp.ToString()
		vs[0], found[0] = v, err == nil
		switch {
		case rueidis.IsRedisNil(err):
			each(i, vs, found, nil)
		case wrongType(err):
			each(i, vs, found, err)
		case err != nil:
			return wrapErr(ctx, op, "", err)
		default:
			each(i, vs, found, nil)
		}
	}
	return nil
}
