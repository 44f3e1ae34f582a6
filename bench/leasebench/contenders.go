package leasebench

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// constructors lists every contender, the floor first.
var constructors = []struct {
	name string
	make func(addr string, ttl time.Duration) (Contender, error)
}{
	{"floor", func(addr string, _ time.Duration) (Contender, error) { return NewFloor(addr) }},
	{"cronguard", func(addr string, _ time.Duration) (Contender, error) { return NewCronguard(addr) }},
	{"bsm/redislock", func(addr string, _ time.Duration) (Contender, error) { return NewRedisLock(addr), nil }},
	{"go-redsync", func(addr string, _ time.Duration) (Contender, error) { return NewRedsync(addr), nil }},
	{"rueidislock", func(addr string, ttl time.Duration) (Contender, error) { return NewRueidisLock(addr, ttl) }},
}

// ContenderNames returns every contender's name, the floor first.
func ContenderNames() []string {
	var out []string
	for _, c := range constructors {
		out = append(out, c.name)
	}
	return out
}

// NewContenders connects the named contenders (all when names is empty) to
// addr, the floor always first. On error it closes what it opened.
func NewContenders(addr string, ttl time.Duration, names []string) ([]Contender, error) {
	for _, n := range names {
		if !slices.Contains(ContenderNames(), n) {
			return nil, fmt.Errorf("leasebench: unknown contender %q (have %s)", n, strings.Join(ContenderNames(), ", "))
		}
	}
	var out []Contender
	for _, c := range constructors {
		if c.name != "floor" && len(names) > 0 && !slices.Contains(names, c.name) {
			continue
		}
		k, err := c.make(addr, ttl)
		if err != nil {
			for _, o := range out {
				o.Close()
			}
			return nil, fmt.Errorf("leasebench: %s: %w", c.name, err)
		}
		out = append(out, k)
	}
	return out, nil
}
