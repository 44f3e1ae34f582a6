package main

import (
	"fmt"
	"net/url"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"
)

// redisServer is where the replicas keep their leases: an in-process
// miniredis by default, or the real server named by -redis.
type redisServer struct {
	embedded *miniredis.Miniredis // nil with -redis
	option   rueidis.ClientOption // each replica's client is built from it
	display  string               // for logs, without a password
}

// startRedis starts an embedded Redis when rawURL is empty and otherwise
// prepares clients for the server at rawURL. It does not connect yet.
func startRedis(rawURL string) (*redisServer, error) {
	if rawURL == "" {
		m := miniredis.NewMiniRedis()
		// Let TTLs run on the wall clock, as on a real server; by default
		// miniredis only expires keys on FastForward.
		m.ClockTTL(true)
		if err := m.Start(); err != nil {
			return nil, fmt.Errorf("start embedded redis: %w", err)
		}
		return &redisServer{
			embedded: m,
			option: rueidis.ClientOption{
				InitAddress: []string{m.Addr()},
				// cronguard never reads through the client-side cache;
				// turning it off saves the CLIENT TRACKING round trips.
				DisableCache: true,
			},
			display: "embedded miniredis at " + m.Addr(),
		}, nil
	}
	opt, err := rueidis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("-redis: %w (want redis://[user:password@]host:port[/db] or rediss://... for TLS)", err)
	}
	opt.DisableCache = true
	display := rawURL
	if u, err := url.Parse(rawURL); err == nil {
		display = u.Redacted()
	}
	return &redisServer{option: opt, display: display}, nil
}

// client returns a new client for one replica; rueidis connects at once, so
// an unreachable server fails here.
func (s *redisServer) client() (rueidis.Client, error) {
	c, err := rueidis.NewClient(s.option)
	if err != nil {
		return nil, fmt.Errorf("connect to redis (%s): %w", s.display, err)
	}
	return c, nil
}

// close stops the embedded server, if there is one.
func (s *redisServer) close() {
	if s.embedded != nil {
		s.embedded.Close()
	}
}
