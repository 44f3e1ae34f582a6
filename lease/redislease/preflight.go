package redislease

import (
	"context"
	"log/slog"
	"strings"
	"time"
)

// preflightTimeout bounds the server check of the first acquire.
const preflightTimeout = 2 * time.Second

// Eviction policies that may evict keys without a TTL, such as fence
// counters and round records.
var evictsPersistentKeys = map[string]bool{
	"allkeys-lru": true, "allkeys-lfu": true, "allkeys-random": true,
}

// preflight checks, once, what it can of the server's configuration and
// logs a warning for each setting that puts the guarantees at risk:
//
//   - a maxmemory-policy of allkeys-*, which may evict the fence counters
//     and round records (keys without a TTL): an occurrence may then run
//     twice, and only fencing.AdvanceOnce keeps its effect single;
//   - appendonly no, under which a restart loses every lease, fence and
//     round (fences still never go back: see lease.FenceFloor).
//
// A server that refuses CONFIG GET (a managed service, an ACL without it)
// is logged at debug and otherwise ignored: the check never fails an
// operation. The first acquire runs it, one round trip bounded by 2s.
func (s *Store) preflight(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), preflightTimeout)
	defer cancel()
	res := s.client.DoMulti(ctx,
		s.client.B().ConfigGet().Parameter("maxmemory-policy").Build(),
		s.client.B().ConfigGet().Parameter("appendonly").Build())
	values := map[string]string{}
	for _, r := range res {
		m, err := r.AsStrMap()
		if err != nil {
			if kv, err2 := r.AsStrSlice(); err2 == nil && len(kv) == 2 { // RESP2: a flat array
				m, err = map[string]string{kv[0]: kv[1]}, nil
			}
		}
		if err != nil {
			s.log.Debug("could not check the server's configuration (CONFIG GET refused or unavailable); persistence and eviction unchecked",
				slog.Any("error", err))
			return
		}
		for k, v := range m {
			values[strings.ToLower(k)] = strings.ToLower(v)
		}
	}
	if p := values["maxmemory-policy"]; evictsPersistentKeys[p] {
		s.log.Warn("redis may evict cronguard's fence counters and round records: an occurrence could then run twice",
			slog.String("setting", "maxmemory-policy"), slog.String("value", p),
			slog.String("fix", "use noeviction or a volatile-* policy"))
	}
	if values["appendonly"] == "no" {
		s.log.Warn("redis keeps no append-only file: a restart loses every lease and round record, so occurrences may run twice",
			slog.String("setting", "appendonly"), slog.String("value", "no"),
			slog.String("fix", "appendonly yes (appendfsync everysec or always)"))
	}
}
