package fleet

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxErrorBytes is the longest error text a Status keeps, in bytes.
const MaxErrorBytes = 300

// Patterns of credentials in error texts: the user information of a URL
// (scheme://user:password@host) and query or key=value parameters whose
// names say they are secrets.
var (
	urlUserinfo  = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/\s@]+@`)
	secretParams = regexp.MustCompile(`(?i)\b(password|passwd|pwd|pass|secret|token|access_token|refresh_token|api_?key|apikey|sslpassword|auth)=([^&\s;,'"]+)`)
)

// SanitizeError returns the text of a job's error as a Status keeps it: on
// one line (control characters, tabs and newlines become spaces, runs of
// spaces one), with the user information of URLs and the values of
// parameters named like secrets (password=, token=, api_key=, ...) replaced
// by "***", cut to MaxErrorBytes at a character boundary with "…" when
// longer. Errors often carry DSNs, tokens or user data, and a Status ends
// up in Redis and on operators' screens: this removes what looks like a
// credential, not everything that might be private (use the job option
// that keeps only the error's class for that).
func SanitizeError(text string) string {
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	text = urlUserinfo.ReplaceAllString(text, "${1}***@")
	text = secretParams.ReplaceAllString(text, "${1}=***")
	var b strings.Builder
	space := false
	for _, r := range text {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	out := b.String()
	if len(out) <= MaxErrorBytes {
		return out
	}
	cut := MaxErrorBytes - len("…")
	for cut > 0 && !utf8.RuneStart(out[cut]) {
		cut--
	}
	return out[:cut] + "…"
}
