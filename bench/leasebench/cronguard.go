package leasebench

import (
	"context"
	"errors"
	"time"

	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/redislease"
	"github.com/redis/rueidis"
)

// Cronguard is cronguard's lease/redislease Store on its own rueidis client
// (DisableCache, as its docs advise), default options.
type Cronguard struct {
	client rueidis.Client
	store  *redislease.Store
}

// NewCronguard connects the cronguard contender to addr.
func NewCronguard(addr string) (*Cronguard, error) {
	c, err := newRueidis(addr)
	if err != nil {
		return nil, err
	}
	s, err := redislease.New(c)
	if err != nil {
		c.Close()
		return nil, err
	}
	return &Cronguard{client: c, store: s}, nil
}

// Name implements Contender.
func (c *Cronguard) Name() string { return "cronguard" }

// CanExtend implements Contender.
func (c *Cronguard) CanExtend() bool { return true }

// Close implements Contender.
func (c *Cronguard) Close() { c.client.Close() }

// Acquire implements Contender.
func (c *Cronguard) Acquire(ctx context.Context, key string, ttl time.Duration) (Held, error) {
	l, err := c.store.Acquire(ctx, key, ttl)
	if errors.Is(err, lease.ErrLocked) {
		return nil, ErrContended
	}
	if err != nil {
		return nil, err
	}
	return cronguardHeld{l}, nil
}

type cronguardHeld struct{ l *lease.Lease }

func (h cronguardHeld) Release(ctx context.Context) error { return h.l.Release(ctx) }

func (h cronguardHeld) Extend(ctx context.Context, ttl time.Duration) error {
	_, err := h.l.Extend(ctx, ttl)
	return err
}
