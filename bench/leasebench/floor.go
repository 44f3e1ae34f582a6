package leasebench

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/rueidis"
)

// The floor's scripts: the minimum a correct single-Redis lock needs.
var (
	floorRelease = rueidis.NewLuaScript(`if redis.call('GET',KEYS[1])==ARGV[1] then return redis.call('DEL',KEYS[1]) end return 0`)
	floorExtend  = rueidis.NewLuaScript(`if redis.call('GET',KEYS[1])==ARGV[1] then return redis.call('PEXPIRE',KEYS[1],ARGV[2]) end return 0`)
)

// Floor is the cheapest correct lock on one Redis: SET key token NX PX ttl
// to acquire, a compare-and-delete script to release and a
// compare-and-pexpire script to extend, on one rueidis client.
type Floor struct {
	client rueidis.Client
}

// NewFloor connects the floor contender to addr.
func NewFloor(addr string) (*Floor, error) {
	c, err := newRueidis(addr)
	if err != nil {
		return nil, err
	}
	return &Floor{client: c}, nil
}

func newRueidis(addr string) (rueidis.Client, error) {
	return rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true, PipelineMultiplex: -1})
}

// Name implements Contender.
func (f *Floor) Name() string { return "floor" }

// CanExtend implements Contender.
func (f *Floor) CanExtend() bool { return true }

// Close implements Contender.
func (f *Floor) Close() { f.client.Close() }

// Acquire implements Contender.
func (f *Floor) Acquire(ctx context.Context, key string, ttl time.Duration) (Held, error) {
	tok := token()
	err := f.client.Do(ctx, f.client.B().Set().Key(key).Value(tok).Nx().PxMilliseconds(ttl.Milliseconds()).Build()).Error()
	if rueidis.IsRedisNil(err) {
		return nil, ErrContended
	}
	if err != nil {
		return nil, err
	}
	return &floorHeld{f: f, key: key, tok: tok}, nil
}

type floorHeld struct {
	f   *Floor
	key string
	tok string
}

func (h *floorHeld) Release(ctx context.Context) error {
	n, err := floorRelease.Exec(ctx, h.f.client, []string{h.key}, []string{h.tok}).AsInt64()
	if err == nil && n != 1 {
		return ErrContended
	}
	return err
}

func (h *floorHeld) Extend(ctx context.Context, ttl time.Duration) error {
	n, err := floorExtend.Exec(ctx, h.f.client, []string{h.key}, []string{h.tok, strconv.FormatInt(ttl.Milliseconds(), 10)}).AsInt64()
	if err == nil && n != 1 {
		return ErrContended
	}
	return err
}
