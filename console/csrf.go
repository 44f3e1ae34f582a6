package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
)

// The forms' tokens: each form carries
//
//	base64url(HMAC-SHA256(secret, "cronguard-console-form\x00" + nonce + "\x00" + action + "\x00" + job))
//
// where nonce is a random value kept in a cookie (SameSite=Strict,
// HttpOnly) that the console sets on the pages with forms. A site that
// cannot read the console's pages cannot learn a token: it knows neither
// the nonce nor the secret, and a token is good only for its action and
// job, with that browser's cookie. This is on top of
// http.CrossOriginProtection, which refuses what a browser marks as
// cross-origin.
const (
	csrfCookie = "cronguard_console_nonce"
	csrfField  = "csrf_token"
	nonceBytes = 24
)

// tokens makes and checks the forms' tokens.
type tokens struct {
	secret []byte
	path   string // the cookie's path
}

func newTokens(secret []byte, base string) *tokens {
	return &tokens{secret: secret, path: base + "/"}
}

// nonce returns the request's nonce, setting a new one on w when the
// request carries none (or a malformed one).
func (t *tokens) nonce(w http.ResponseWriter, r *http.Request) string {
	if n, ok := t.requestNonce(r); ok {
		return n
	}
	b := make([]byte, nonceBytes)
	rand.Read(b) // never fails (crypto/rand)
	n := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{
		Name: csrfCookie, Value: n, Path: t.path,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	return n
}

// requestNonce returns the nonce the request's cookie carries, if it is
// well formed.
func (t *tokens) requestNonce(r *http.Request) (string, bool) {
	ck, err := r.Cookie(csrfCookie)
	if err != nil {
		return "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(ck.Value)
	if err != nil || len(b) != nonceBytes {
		return "", false
	}
	return ck.Value, true
}

// token returns the token of a form for the action a, under nonce.
func (t *tokens) token(nonce string, a Action) string {
	return base64.RawURLEncoding.EncodeToString(t.mac(nonce, a))
}

func (t *tokens) mac(nonce string, a Action) []byte {
	m := hmac.New(sha256.New, t.secret)
	m.Write([]byte("cronguard-console-form\x00"))
	m.Write([]byte(nonce))
	m.Write([]byte{0})
	m.Write([]byte(a.Kind))
	m.Write([]byte{0})
	m.Write([]byte(a.Job))
	return m.Sum(nil)
}

// check reports whether the request's form (already parsed) carries the
// token of a under the request's cookie's nonce.
func (t *tokens) check(r *http.Request, a Action) bool {
	nonce, ok := t.requestNonce(r)
	if !ok {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(r.PostForm.Get(csrfField))
	if err != nil {
		return false
	}
	return hmac.Equal(got, t.mac(nonce, a))
}
