package lease_test

import (
	"strings"
	"testing"
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
