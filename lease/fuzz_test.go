package lease_test

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/cronguard/cronguard/lease"
)

func FuzzNormalizeKey(f *testing.F) {
	for _, s := range []string{
		"", "job", "a:b/{c}", "🔒", "cafe\u0301", "caf\u00e9", "\xff", "\u0958",
		strings.Repeat("k", 512), strings.Repeat("k", 510) + "e\u0301", strings.Repeat("\u0301", 40),
		strings.Repeat("k", 510) + "\u0958", "\x00", "\uFEFF",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		got, err := lease.NormalizeKey(key)
		if err != nil {
			if got != "" {
				t.Fatalf("NormalizeKey(%q) returned %q with error %v", key, got, err)
			}
			return
		}
		if !utf8.ValidString(got) {
			t.Fatalf("NormalizeKey(%q) = %q: not valid UTF-8", key, got)
		}
		if want := norm.NFC.String(key); got != want {
			// The ASCII fast path must agree with the normalizer.
			t.Fatalf("NormalizeKey(%q) = %q, NFC gives %q", key, got, want)
		}
		if !norm.NFC.IsNormalString(got) {
			t.Fatalf("NormalizeKey(%q) = %q: not NFC", key, got)
		}
		if got == "" || len(got) > lease.MaxKeyBytes {
			t.Fatalf("NormalizeKey(%q) = %q: %d bytes", key, got, len(got))
		}
		again, err := lease.NormalizeKey(got)
		if err != nil || again != got {
			t.Fatalf("NormalizeKey is not idempotent: %q -> %q -> %q, %v", key, got, again, err)
		}
	})
}

// FuzzValidateAttempts: a policy passes exactly when Max is from 1 to
// lease.MaxAttempts and Deadline lies after the Unix epoch, within what a
// store keeps in Unix ms; a refusal is ErrInvalidArgument naming the rule.
func FuzzValidateAttempts(f *testing.F) {
	for _, c := range []struct {
		max int
		ms  int64
	}{{1, 1}, {0, 1}, {3, 1_900_000_000_000}, {lease.MaxAttempts, 1}, {lease.MaxAttempts + 1, 1}, {-1, -1}, {2, 9_000_000_000_001}, {2, 0}} {
		f.Add(c.max, c.ms)
	}
	f.Fuzz(func(t *testing.T, max int, ms int64) {
		a := lease.Attempts{Max: max, Deadline: time.UnixMilli(ms)}
		err := lease.ValidateAttempts(a)
		want := max >= 1 && max <= lease.MaxAttempts && ms > 0 && ms <= 9_000_000_000_000
		if (err == nil) != want {
			t.Fatalf("ValidateAttempts(%+v) = %v, want valid %v", a, err, want)
		}
		if err != nil && (!errors.Is(err, lease.ErrInvalidArgument) || !strings.Contains(err.Error(), "attempts")) {
			t.Fatalf("ValidateAttempts(%+v) = %v: not an ErrInvalidArgument naming the attempts rule", a, err)
		}
	})
}

// FuzzResolveAcquireOptions_Completion: WithAttempts and WithResume
// combine only as documented, whatever their values, and never panic.
func FuzzResolveAcquireOptions_Completion(f *testing.F) {
	f.Add(uint8(0b0011), int64(5), int64(0), 2, int64(1_900_000_000_000))
	f.Add(uint8(0b0100), int64(0), int64(5), 0, int64(0))
	f.Add(uint8(0b1110), int64(5), int64(5), 2, int64(1))
	f.Fuzz(func(t *testing.T, which uint8, round, resume int64, max int, ms int64) {
		var opts []lease.AcquireOption
		hasRound, hasAttempts, hasResume, hasTrigger := which&1 != 0, which&2 != 0, which&4 != 0, which&8 != 0
		if hasRound {
			opts = append(opts, lease.WithRound(round))
		}
		if hasAttempts {
			opts = append(opts, lease.WithAttempts(lease.Attempts{Max: max, Deadline: time.UnixMilli(ms)}))
		}
		if hasResume {
			opts = append(opts, lease.WithResume(resume))
		}
		if hasTrigger {
			opts = append(opts, lease.WithTrigger())
		}
		o, err := lease.ResolveAcquireOptions(opts)
		if err != nil {
			if !errors.Is(err, lease.ErrInvalidArgument) {
				t.Fatalf("ResolveAcquireOptions: %v is not ErrInvalidArgument", err)
			}
			return
		}
		if hasAttempts && (!hasRound || hasResume || hasTrigger || lease.ValidateAttempts(o.Attempts) != nil) {
			t.Fatalf("attempts accepted with round %v, resume %v, trigger %v, policy %+v", hasRound, hasResume, hasTrigger, o.Attempts)
		}
		if hasResume && (o.Resume <= 0 || hasRound || hasTrigger) {
			t.Fatalf("resume %d accepted with round %v, trigger %v", o.Resume, hasRound, hasTrigger)
		}
		if hasAttempts != (o.Attempts.Max > 0) {
			t.Fatalf("Attempts.Max = %d with attempts given %v", o.Attempts.Max, hasAttempts)
		}
	})
}
