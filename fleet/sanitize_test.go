package fleet

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestSanitizeError(t *testing.T) {
	tests := []struct{ in, want string }{
		{"disk full", "disk full"},
		{"line one\nline two\r\n\tindented", "line one line two indented"},
		{`dial postgres://app:s3cr3t@db.internal:5432/billing failed`, `dial postgres://***@db.internal:5432/billing failed`},
		{`GET https://user@api.example.com/v1?token=abc123&x=1: 401`, `GET https://***@api.example.com/v1?token=***&x=1: 401`},
		{`redis://:hunter2@cache:6379`, `redis://***@cache:6379`},
		{`connect: host=db password=pa55 sslmode=require`, `connect: host=db password=*** sslmode=require`},
		{`api_key=AKIA123 APIKEY=zzz Secret=shh`, `api_key=*** APIKEY=*** Secret=***`},
		{"bad \xff byte", "bad \uFFFD byte"},
		{"  leading and trailing  ", "leading and trailing"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, SanitizeError(tt.in), "%q", tt.in)
	}
}

func TestSanitizeError_CutAtCharacterBoundary(t *testing.T) {
	long := strings.Repeat("é", MaxErrorBytes) // 2 bytes each
	got := SanitizeError(long)
	assert.LessOrEqual(t, len(got), MaxErrorBytes)
	assert.True(t, utf8.ValidString(got))
	assert.True(t, strings.HasSuffix(got, "…"))
	assert.Equal(t, strings.Repeat("x", MaxErrorBytes), SanitizeError(strings.Repeat("x", MaxErrorBytes)), "exactly the limit is kept")
}

func FuzzSanitizeError(f *testing.F) {
	for _, s := range []string{"", "a\nb", "postgres://u:p@h/db", strings.Repeat("ü", 400), "token=\x00\x01"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := SanitizeError(in)
		if len(out) > MaxErrorBytes || !utf8.ValidString(out) || strings.ContainsAny(out, "\n\r\t") {
			t.Fatalf("SanitizeError(%q) = %q", in, out)
		}
	})
}
