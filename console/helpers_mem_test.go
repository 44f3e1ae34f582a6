package console_test

import (
	"context"
	"html"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/console"
	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/inspect"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/memory"
)

// Registrations as a scheduler publishes them (the scheduler's default
// key prefix "job:").
var (
	reportJob = fleet.Job{Name: "report", Key: "job:report", Schedule: `cron("0 3 * * *")`,
		Spec: "cron:Europe/Paris:0 3 * * *", Fingerprint: "fp-report-0123456789"}
	tickJob = fleet.Job{Name: "tick", Key: "job:tick", Schedule: "every(1m0s)",
		Spec: "every:60000000000+0", Fingerprint: "fp-tick-0123456789"}
)

// memEnv is an in-memory fleet with two replicas and a console on it.
type memEnv struct {
	store *memory.Store
	in    *inspect.Inspector
}

func newMemEnv(t *testing.T) memEnv {
	t.Helper()
	store, err := memory.New()
	require.NoError(t, err)
	in, err := inspect.New(store, inspect.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	e := memEnv{store: store, in: in}
	e.publish(t, "replica-a", reportJob, tickJob)
	e.publish(t, "replica-b", reportJob, tickJob)
	return e
}

// publish registers a replica with jobs, its entry living a minute.
func (e memEnv) publish(t *testing.T, id string, jobs ...fleet.Job) {
	t.Helper()
	_, err := e.store.PublishReplica(t.Context(), fleet.Replica{ID: id, Version: "v1.2.3", Started: time.Now(),
		Refresh: 5 * time.Second, Jobs: jobs}, time.Minute)
	require.NoError(t, err)
}

// hold acquires j's lease as replica's run would, and returns it.
func (e memEnv) hold(t *testing.T, replica string, j fleet.Job) *lease.Lease {
	t.Helper()
	l, err := e.store.Acquire(t.Context(), j.Key, time.Minute, lease.WithOwner(replica+"/"+j.Name))
	require.NoError(t, err)
	return l
}

// finish releases l with a status, as a replica does at a run's end.
func (e memEnv) finish(t *testing.T, l *lease.Lease, replica, outcome, errText string) {
	t.Helper()
	_, err := e.store.ReleaseWithStatus(context.Background(), l, fleet.Status{Occurrence: l.AcquiredAt, Owner: l.Owner,
		Fence: l.Fence, Started: l.AcquiredAt, Duration: 1500 * time.Millisecond, Outcome: outcome, Error: errText,
		Replica: replica, Attempt: 1})
	require.NoError(t, err)
}

// job reads a job as the fleet sees it.
func (e memEnv) job(t *testing.T, name string) inspect.Job {
	t.Helper()
	j, err := e.in.Job(t.Context(), name)
	require.NoError(t, err)
	return j
}

// console builds a console on the env's Inspector.
func (e memEnv) console(t *testing.T, opts ...console.Option) *console.Console {
	t.Helper()
	c, err := console.New(e.in, append([]console.Option{console.WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	require.NoError(t, err)
	return c
}

// allowAll is an authorizer that allows every action.
func allowAll(*http.Request, console.Action) bool { return true }

// browser is a client of a console that keeps its cookies, as a browser
// does, and sends the headers a browser sends for same-origin requests.
type browser struct {
	t       *testing.T
	h       http.Handler
	cookies map[string]*http.Cookie
}

func newBrowser(t *testing.T, h http.Handler) *browser {
	return &browser{t: t, h: h, cookies: map[string]*http.Cookie{}}
}

// do serves req and keeps the cookies the answer sets.
func (b *browser) do(req *http.Request) *httptest.ResponseRecorder {
	b.t.Helper()
	req.Host = "console.example"
	for _, c := range b.cookies {
		req.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	b.h.ServeHTTP(rec, req)
	for _, c := range rec.Result().Cookies() {
		b.cookies[c.Name] = c
	}
	return rec
}

func (b *browser) get(path string) *httptest.ResponseRecorder {
	b.t.Helper()
	req := httptest.NewRequest(http.MethodGet, "http://console.example"+path, nil)
	req.Header.Set("Sec-Fetch-Site", "none")
	return b.do(req)
}

// post submits a form as a page of the console would (same origin).
func (b *browser) post(path string, form url.Values) *httptest.ResponseRecorder {
	b.t.Helper()
	return b.postFrom("same-origin", "http://console.example", path, form)
}

// postFrom submits a form from a page of origin, with the Sec-Fetch-Site
// the browser would send ("" for none).
func (b *browser) postFrom(site, origin, path string, form url.Values) *httptest.ResponseRecorder {
	b.t.Helper()
	req := httptest.NewRequest(http.MethodPost, "http://console.example"+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if site != "" {
		req.Header.Set("Sec-Fetch-Site", site)
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	return b.do(req)
}

var formRE = regexp.MustCompile(`(?s)<form method="post" action="([^"]+)"[^>]*>.*?name="csrf_token" value="([^"]+)"`)

// tokens returns the forms of a page: their token by action address.
func tokens(t *testing.T, page string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range formRE.FindAllStringSubmatch(page, -1) {
		out[html.UnescapeString(m[1])] = html.UnescapeString(m[2])
	}
	return out
}

// formToken opens page and returns the token of its form posting to
// action.
func (b *browser) formToken(page, action string) string {
	b.t.Helper()
	rec := b.get(page)
	require.Equal(b.t, http.StatusOK, rec.Code, rec.Body.String())
	ts := tokens(b.t, rec.Body.String())
	tok, ok := ts[action]
	require.True(b.t, ok, "page %s has a form posting to %s; forms: %v", page, action, ts)
	return tok
}

// assertSecurityHeaders checks the headers every answer carries.
func assertSecurityHeaders(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	h := rec.Header()
	csp := h.Get("Content-Security-Policy")
	assert.Contains(t, csp, "default-src 'self'")
	assert.Contains(t, csp, "frame-ancestors 'none'")
	assert.Equal(t, "nosniff", h.Get("X-Content-Type-Options"))
	assert.Equal(t, "DENY", h.Get("X-Frame-Options"))
	assert.Equal(t, "same-origin", h.Get("Referrer-Policy"))
	assert.Empty(t, h.Get("Access-Control-Allow-Origin"), "no CORS")
}
