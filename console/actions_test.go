package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/console"
	"github.com/cronguard/cronguard/fleet"
)

// A read-only console (no authorizer) refuses every action with 403 and
// changes nothing, whatever the form carries.
func TestConsole_Actions_ReadOnlyForbidden(t *testing.T) {
	e := newMemEnv(t)
	e.hold(t, "replica-a", tickJob)
	require.NoError(t, e.in.Pause(t.Context(), "report", "alice", "kept"))
	b := newBrowser(t, e.console(t))
	b.get("/jobs/tick")
	for _, path := range []string{"/jobs/tick/pause", "/jobs/report/resume", "/jobs/tick/trigger", "/jobs/tick/release"} {
		rec := b.post(path, url.Values{"note": {"x"}, "confirm": {"release"}, "csrf_token": {"anything"}})
		assert.Equal(t, http.StatusForbidden, rec.Code, path)
		assertSecurityHeaders(t, rec)
		assert.Contains(t, rec.Body.String(), "read-only", path)
	}
	rec := b.get("/jobs/tick/release")
	assert.Equal(t, http.StatusForbidden, rec.Code, "no confirmation page either")

	tick, report := e.job(t, "tick"), e.job(t, "report")
	assert.Nil(t, tick.Pause, "tick not paused")
	assert.Zero(t, tick.PendingTriggers, "no trigger queued")
	assert.NotNil(t, tick.Holder, "the lease is still held")
	require.NotNil(t, report.Pause, "report still paused")
	assert.Equal(t, "kept", report.Pause.Note)
}

// Actions need the form's token of this action, job and cookie, and a
// same-origin request: anything else answers 403 and changes nothing.
func TestConsole_Actions_CSRFRefused(t *testing.T) {
	e := newMemEnv(t)
	c := e.console(t, console.WithAuthorizer(allowAll))
	b := newBrowser(t, c)
	tok := b.formToken("/jobs/tick", "/jobs/tick/pause")
	reportTok := b.formToken("/jobs/report", "/jobs/report/pause")
	note := "maintenance"

	tests := []struct {
		name         string
		site, origin string
		path         string
		form         url.Values
		cookies      bool
	}{
		{"cross-site form post", "cross-site", "https://evil.example", "/jobs/tick/pause", url.Values{"note": {note}, "csrf_token": {tok}}, true},
		{"same-site but other origin", "same-site", "https://other.console.example", "/jobs/tick/pause", url.Values{"note": {note}, "csrf_token": {tok}}, true},
		{"other origin without Sec-Fetch-Site", "", "https://evil.example", "/jobs/tick/pause", url.Values{"note": {note}, "csrf_token": {tok}}, true},
		{"no token", "same-origin", "http://console.example", "/jobs/tick/pause", url.Values{"note": {note}}, true},
		{"empty token", "same-origin", "http://console.example", "/jobs/tick/pause", url.Values{"note": {note}, "csrf_token": {""}}, true},
		{"forged token", "same-origin", "http://console.example", "/jobs/tick/pause", url.Values{"note": {note}, "csrf_token": {"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}}, true},
		{"another job's token", "same-origin", "http://console.example", "/jobs/tick/pause", url.Values{"note": {note}, "csrf_token": {reportTok}}, true},
		{"another action's token", "same-origin", "http://console.example", "/jobs/tick/trigger", url.Values{"csrf_token": {tok}}, true},
		{"token without its cookie", "same-origin", "http://console.example", "/jobs/tick/pause", url.Values{"note": {note}, "csrf_token": {tok}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nb := b
			if !tt.cookies {
				nb = newBrowser(t, c)
			}
			rec := nb.postFrom(tt.site, tt.origin, tt.path, tt.form)
			assert.Equal(t, http.StatusForbidden, rec.Code, rec.Body.String())
			assertSecurityHeaders(t, rec)
			j := e.job(t, "tick")
			assert.Nil(t, j.Pause, "nothing paused")
			assert.Zero(t, j.PendingTriggers, "nothing triggered")
		})
	}

	// The same form, from the console's page, works.
	rec := b.post("/jobs/tick/pause", url.Values{"note": {note}, "csrf_token": {tok}})
	require.Equal(t, http.StatusSeeOther, rec.Code, rec.Body.String())
	require.NotNil(t, e.job(t, "tick").Pause)
}

// Another console's secret (a restart) makes the open forms stale: 403.
func TestConsole_Actions_TokenOfAnotherSecret(t *testing.T) {
	e := newMemEnv(t)
	b := newBrowser(t, e.console(t, console.WithAuthorizer(allowAll)))
	tok := b.formToken("/jobs/tick", "/jobs/tick/pause")
	b.h = e.console(t, console.WithAuthorizer(allowAll))
	rec := b.post("/jobs/tick/pause", url.Values{"note": {"x"}, "csrf_token": {tok}})
	assert.Equal(t, http.StatusForbidden, rec.Code)
	assert.Contains(t, rec.Body.String(), "stale")
	assert.Nil(t, e.job(t, "tick").Pause)

	// Consoles that share a secret accept each other's forms.
	secret := []byte(strings.Repeat("s", console.MinSecretBytes))
	b = newBrowser(t, e.console(t, console.WithAuthorizer(allowAll), console.WithSecret(secret)))
	tok = b.formToken("/jobs/tick", "/jobs/tick/pause")
	b.h = e.console(t, console.WithAuthorizer(allowAll), console.WithSecret(secret))
	rec = b.post("/jobs/tick/pause", url.Values{"note": {"x"}, "csrf_token": {tok}})
	assert.Equal(t, http.StatusSeeOther, rec.Code)
}

// Bad input answers 4xx with a message saying what is wrong, and changes
// nothing.
func TestConsole_Pause_BadInput(t *testing.T) {
	e := newMemEnv(t)
	b := newBrowser(t, e.console(t, console.WithAuthorizer(allowAll)))
	tok := b.formToken("/jobs/tick", "/jobs/tick/pause")
	tests := []struct {
		name string
		path string
		note string
		code int
		want string
	}{
		{"empty note", "/jobs/tick/pause", "", http.StatusBadRequest, "needs a note"},
		{"blank note", "/jobs/tick/pause", "  \u00a0 ", http.StatusBadRequest, "needs a note"},
		{"note over the limit", "/jobs/tick/pause", strings.Repeat("n", fleet.MaxPauseNoteBytes+1), http.StatusBadRequest, "too long: at most 1024 bytes, got 1025"},
		{"multi-byte note over the limit", "/jobs/tick/pause", strings.Repeat("é", fleet.MaxPauseNoteBytes/2+1), http.StatusBadRequest, "too long"},
		{"note with a newline", "/jobs/tick/pause", "one\ntwo", http.StatusBadRequest, "without control characters"},
		{"note with an escape", "/jobs/tick/pause", "red \x1b[31m", http.StatusBadRequest, "without control characters"},
		{"note with NUL", "/jobs/tick/pause", "a\x00b", http.StatusBadRequest, "without control characters"},
		{"note not UTF-8", "/jobs/tick/pause", "caf\xe9", http.StatusBadRequest, "not valid UTF-8"},
		{"huge body", "/jobs/tick/pause", strings.Repeat("n", 64<<10), http.StatusRequestEntityTooLarge, "too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := b.post(tt.path, url.Values{"note": {tt.note}, "csrf_token": {tok}})
			assert.Equal(t, tt.code, rec.Code)
			assert.Contains(t, rec.Body.String(), tt.want)
			assertSecurityHeaders(t, rec)
			assert.Nil(t, e.job(t, "tick").Pause, "nothing paused")
		})
	}

	// At the limit, it is taken.
	rec := b.post("/jobs/tick/pause", url.Values{"note": {strings.Repeat("n", fleet.MaxPauseNoteBytes)}, "csrf_token": {tok}})
	require.Equal(t, http.StatusSeeOther, rec.Code, rec.Body.String())
	assert.Len(t, e.job(t, "tick").Pause.Note, fleet.MaxPauseNoteBytes)
}

// Unknown jobs, odd names and odd addresses answer 4xx.
func TestConsole_BadAddress(t *testing.T) {
	e := newMemEnv(t)
	b := newBrowser(t, e.console(t, console.WithAuthorizer(allowAll)))
	tests := []struct {
		name, path string
		code       int
		want       string
	}{
		{"unknown job", "/jobs/nope", http.StatusNotFound, "No live replica has registered this job"},
		{"control character in name", "/jobs/a%07b", http.StatusBadRequest, "without control characters"},
		{"name not UTF-8", "/jobs/a%ffb", http.StatusBadRequest, "not valid UTF-8"},
		{"name too long", "/jobs/" + strings.Repeat("x", 2000), http.StatusBadRequest, "too long"},
		{"history offset not a number", "/jobs/tick?offset=ten", http.StatusBadRequest, "offset"},
		{"history offset negative", "/jobs/tick?offset=-1", http.StatusBadRequest, "offset"},
		{"no such page", "/nope", http.StatusNotFound, "no page"},
		{"static directory", "/static/", http.StatusNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := b.get(tt.path)
			assert.Equal(t, tt.code, rec.Code)
			assert.Contains(t, rec.Body.String(), tt.want)
			assertSecurityHeaders(t, rec)
		})
	}

	// An action on an unknown job: 404, after the form checks.
	tok := b.formToken("/jobs/tick", "/jobs/tick/pause")
	rec := b.post("/jobs/nope/pause", url.Values{"note": {"x"}, "csrf_token": {tok}})
	assert.Equal(t, http.StatusForbidden, rec.Code, "tick's token is not nope's")
	rec = b.postFrom("same-origin", "", "/jobs/tick/pause", url.Values{"note": {"x"}})
	assert.Equal(t, http.StatusForbidden, rec.Code)
	rec = b.get("/jobs/tick/pause")
	assert.Equal(t, http.StatusNotFound, rec.Code, "actions are POST only")
	assertSecurityHeaders(t, rec)
}

// Pause, resume, trigger and force-release from the job page's forms.
func TestConsole_Actions_FromTheJobPage(t *testing.T) {
	e := newMemEnv(t)
	c := e.console(t, console.WithAuthorizer(allowAll), console.WithTriggerWait(0),
		console.WithOperator(func(*http.Request) string { return "bob" }))
	b := newBrowser(t, c)

	tok := b.formToken("/jobs/tick", "/jobs/tick/pause")
	ck := b.cookies["cronguard_console_nonce"]
	require.NotNil(t, ck, "the page set the token cookie")
	assert.True(t, ck.HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, ck.SameSite)
	rec := b.post("/jobs/tick/pause", url.Values{"note": {"disk full on the warehouse"}, "csrf_token": {tok}})
	require.Equal(t, http.StatusSeeOther, rec.Code)
	assert.Equal(t, "/jobs/tick?done=paused", rec.Header().Get("Location"))
	p := e.job(t, "tick").Pause
	require.NotNil(t, p)
	assert.Equal(t, "bob", p.By)
	assert.Equal(t, "disk full on the warehouse", p.Note)
	body := b.get("/jobs/tick?done=paused").Body.String()
	assert.Contains(t, body, "Paused on every replica")
	assert.Contains(t, body, "disk full on the warehouse")
	assert.NotContains(t, tokens(t, body), "/jobs/tick/trigger", "a paused job offers resume, not trigger")

	tok = b.formToken("/jobs/tick", "/jobs/tick/resume")
	rec = b.post("/jobs/tick/resume", url.Values{"csrf_token": {tok}})
	require.Equal(t, http.StatusSeeOther, rec.Code)
	assert.Equal(t, "/jobs/tick?done=resumed", rec.Header().Get("Location"))
	assert.Nil(t, e.job(t, "tick").Pause)
	rec = b.post("/jobs/tick/resume", url.Values{"csrf_token": {tok}})
	assert.Equal(t, "/jobs/tick?done=not_paused", rec.Header().Get("Location"))

	tok = b.formToken("/jobs/tick", "/jobs/tick/trigger")
	rec = b.post("/jobs/tick/trigger", url.Values{"csrf_token": {tok}})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Contains(t, rec.Body.String(), "queued: a replica runs it")
	assert.Contains(t, rec.Body.String(), "by bob")
	assert.Equal(t, 1, e.job(t, "tick").PendingTriggers)

	// A job paused since its page was served cannot be triggered: 409,
	// nothing queued.
	require.NoError(t, e.in.Pause(t.Context(), "tick", "alice", "x"))
	rec = b.post("/jobs/tick/trigger", url.Values{"csrf_token": {tok}})
	assert.Equal(t, http.StatusConflict, rec.Code)
	assert.Contains(t, rec.Body.String(), "paused")
	assert.Equal(t, 1, e.job(t, "tick").PendingTriggers)
}

// Force-release goes through a confirmation page that says what it
// risks; the form without the confirmation is refused.
func TestConsole_ForceRelease_Confirmed(t *testing.T) {
	e := newMemEnv(t)
	l := e.hold(t, "replica-a", tickJob)
	b := newBrowser(t, e.console(t, console.WithAuthorizer(allowAll)))

	body := b.get("/jobs/tick").Body.String()
	assert.Contains(t, body, `href="/jobs/tick/release"`, "the job page links to the confirmation page")
	assert.NotContains(t, tokens(t, body), "/jobs/tick/release", "but has no release form")

	rec := b.get("/jobs/tick/release")
	require.Equal(t, http.StatusOK, rec.Code)
	body = rec.Body.String()
	assert.Contains(t, body, "only safe if the job's writes are fenced")
	assert.Contains(t, body, "may now take the lease and run the job at the same time")
	assert.NotContains(t, body, l.ID)
	tok := tokens(t, body)["/jobs/tick/release"]
	require.NotEmpty(t, tok)

	rec = b.post("/jobs/tick/release", url.Values{"csrf_token": {tok}})
	assert.Equal(t, http.StatusBadRequest, rec.Code, "not confirmed")
	assert.NotNil(t, e.job(t, "tick").Holder)

	rec = b.post("/jobs/tick/release", url.Values{"csrf_token": {tok}, "confirm": {"release"}})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Contains(t, rec.Body.String(), "replica-a/tick")
	assert.Contains(t, rec.Body.String(), "The holder is not stopped")
	assert.NotContains(t, rec.Body.String(), l.ID)
	assert.Nil(t, e.job(t, "tick").Holder)

	rec = b.post("/jobs/tick/release", url.Values{"csrf_token": {tok}, "confirm": {"release"}})
	assert.Equal(t, http.StatusConflict, rec.Code, "nothing left to release")
}

// The authorizer decides per action and job, on the page and on the post.
func TestConsole_Authorizer_PerAction(t *testing.T) {
	e := newMemEnv(t)
	e.hold(t, "replica-a", tickJob)
	var asked []console.Action
	only := func(r *http.Request, a console.Action) bool {
		asked = append(asked, a)
		return a.Kind == console.ActionPause && a.Job == "tick"
	}
	b := newBrowser(t, e.console(t, console.WithAuthorizer(only)))
	body := b.get("/jobs/tick").Body.String()
	ts := tokens(t, body)
	assert.Contains(t, ts, "/jobs/tick/pause")
	assert.NotContains(t, ts, "/jobs/tick/trigger")
	assert.NotContains(t, body, "/jobs/tick/release")
	assert.Contains(t, asked, console.Action{Kind: console.ActionTrigger, Job: "tick"})

	assert.Equal(t, http.StatusForbidden, b.get("/jobs/tick/release").Code)
	rec := b.post("/jobs/tick/trigger", url.Values{"csrf_token": {ts["/jobs/tick/pause"]}})
	assert.Equal(t, http.StatusForbidden, rec.Code)
	assert.Contains(t, rec.Body.String(), "may not")
	assert.Zero(t, e.job(t, "tick").PendingTriggers)
}

// An operator name that is not a valid holder label refuses the action
// with 500, changing nothing.
func TestConsole_Operator_Invalid(t *testing.T) {
	e := newMemEnv(t)
	b := newBrowser(t, e.console(t, console.WithAuthorizer(allowAll),
		console.WithOperator(func(*http.Request) string { return "eve\nadmin" })))
	tok := b.formToken("/jobs/tick", "/jobs/tick/pause")
	rec := b.post("/jobs/tick/pause", url.Values{"note": {"x"}, "csrf_token": {tok}})
	assert.Equal(t, http.StatusInternalServerError, rec.Code)
	assert.Nil(t, e.job(t, "tick").Pause)
}
