package faults

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestAOFRing_Pick_OnlyCopiesAgedTwoToSixSeconds(t *testing.T) {
	now := time.Now()
	copyAged := func(age time.Duration) aofCopy {
		return aofCopy{dir: age.String(), start: now.Add(-age), end: now.Add(-age + time.Millisecond)}
	}
	tests := []struct {
		name string
		ages []time.Duration
		want []string // the copies pick may return
	}{
		{"none old enough", []time.Duration{time.Second, 1500 * time.Millisecond}, nil},
		{"one in range", []time.Duration{7 * time.Second, 3 * time.Second, time.Second}, []string{"3s"}},
		{"two in range", []time.Duration{5 * time.Second, 3 * time.Second, time.Second}, []string{"5s", "3s"}},
		{"all too old", []time.Duration{8 * time.Second, 7 * time.Second}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ring := &aofRing{}
			for _, a := range tt.ages {
				ring.copies = append(ring.copies, copyAged(a))
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for range 20 {
				c, ok := ring.pick(rng)
				if tt.want == nil {
					assert.False(t, ok)
					continue
				}
				if assert.True(t, ok) {
					assert.Contains(t, tt.want, c.dir)
				}
			}
		})
	}
}
