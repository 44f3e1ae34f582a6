package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/console"
	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/lease"
)

func TestNew_InvalidOptions(t *testing.T) {
	e := newMemEnv(t)
	_, err := console.New(nil)
	require.ErrorIs(t, err, console.ErrInvalidOption)
	tests := []struct {
		name string
		opt  console.Option
		want string
	}{
		{"nil option", nil, "option must not be nil"},
		{"nil authorizer", console.WithAuthorizer(nil), "authorizer must not be nil"},
		{"nil operator", console.WithOperator(nil), "operator func must not be nil"},
		{"nil logger", console.WithLogger(nil), "logger must not be nil"},
		{"base path without slash", console.WithBasePath("cron"), "must start with /"},
		{"base path with trailing slash", console.WithBasePath("/cron/"), "not end with /"},
		{"base path with quote", console.WithBasePath(`/cr"on`), "without spaces, quotes"},
		{"negative refresh", console.WithRefresh(-time.Second), "refresh must be 0 or"},
		{"sub-second refresh", console.WithRefresh(500 * time.Millisecond), "whole number of seconds"},
		{"long trigger wait", console.WithTriggerWait(time.Hour), "wait must be from 0"},
		{"short secret", console.WithSecret([]byte("short")), "at least 32 bytes"},
		{"bad origin", console.WithTrustedOrigin("not an origin"), "WithTrustedOrigin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := console.New(e.in, tt.opt)
			require.ErrorIs(t, err, console.ErrInvalidOption)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// The fleet, jobs and job pages show what the store holds, with the
// security headers, and no lease ID or key.
func TestConsole_Pages_ShowTheFleet(t *testing.T) {
	e := newMemEnv(t)
	l := e.hold(t, "replica-a", tickJob)
	done := e.hold(t, "replica-b", reportJob)
	e.finish(t, done, "replica-b", fleet.OutcomeFailed, "warehouse unreachable")
	require.NoError(t, e.in.Pause(t.Context(), "report", "alice", "migration <b>until</b> 14:00"))
	b := newBrowser(t, e.console(t))

	rec := b.get("/")
	require.Equal(t, http.StatusOK, rec.Code)
	assertSecurityHeaders(t, rec)
	assert.Equal(t, "no-store", rec.Header().Get("Cache-Control"))
	body := rec.Body.String()
	for _, want := range []string{"replica-a", "replica-b", "v1.2.3", `href="/jobs/report"`, `href="/jobs/tick"`, "read-only"} {
		assert.Contains(t, body, want)
	}

	rec = b.get("/jobs")
	require.Equal(t, http.StatusOK, rec.Code)
	assertSecurityHeaders(t, rec)
	body = rec.Body.String()
	assert.Contains(t, body, "alice: migration &lt;b&gt;until&lt;/b&gt; 14:00", "the note, escaped")
	assert.NotContains(t, body, "<b>until</b>")
	assert.Contains(t, body, "failed")
	assert.Contains(t, body, "warehouse unreachable")
	assert.Contains(t, body, "replica-a", "tick runs on replica-a")
	assert.Contains(t, body, "CET", "report's next occurrence in its zone, Europe/Paris")

	rec = b.get("/jobs/report")
	require.Equal(t, http.StatusOK, rec.Code)
	body = rec.Body.String()
	assert.Contains(t, body, "Next occurrences")
	assert.Equal(t, 5, strings.Count(body, "03:00:00 CE"), "five next occurrences at 03:00 Paris time")
	assert.Contains(t, body, "Run history")
	assert.Contains(t, body, "warehouse unreachable")
	assert.Contains(t, body, "This console is read-only")
	assert.Empty(t, tokens(t, body), "a read-only console shows no form")

	rec = b.get("/jobs/tick")
	require.Equal(t, http.StatusOK, rec.Code)
	body = rec.Body.String()
	j := e.job(t, "tick")
	require.NotNil(t, j.Holder)
	assert.Contains(t, body, j.Holder.LeaseHash, "the lease's short hash identifies it")
	for _, page := range []string{"/", "/jobs", "/jobs/tick", "/jobs/report"} {
		body := b.get(page).Body.String()
		assert.NotContains(t, body, l.ID, "no lease ID on %s", page)
		assert.NotContains(t, body, lease.ShortID(l.ID), "not even its short form on %s", page)
		assert.NotContains(t, body, done.ID, "no lease ID on %s", page)
		assert.NotContains(t, body, "job:tick", "no lease key on %s", page)
		assert.NotContains(t, body, "job:report", "no lease key on %s", page)
	}
}

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

// Under a base path, the console answers there, and its links and forms
// point there.
func TestConsole_BasePath(t *testing.T) {
	e := newMemEnv(t)
	c := e.console(t, console.WithAuthorizer(allowAll), console.WithBasePath("/ops/cron"))
	mux := http.NewServeMux()
	mux.Handle("/ops/cron/", c)
	b := newBrowser(t, mux)

	rec := b.get("/ops/cron/jobs")
	require.Equal(t, http.StatusOK, rec.Code)
	body := rec.Body.String()
	assert.Contains(t, body, `href="/ops/cron/jobs/tick"`)
	assert.Contains(t, body, `href="/ops/cron/static/console.css"`)
	assert.Equal(t, http.StatusOK, b.get("/ops/cron/static/console.css").Code)
	tok := b.formToken("/ops/cron/jobs/tick", "/ops/cron/jobs/tick/pause")
	assert.Equal(t, "/ops/cron/", b.cookies["cronguard_console_nonce"].Path)
	rec = b.post("/ops/cron/jobs/tick/pause", url.Values{"note": {"x"}, "csrf_token": {tok}})
	require.Equal(t, http.StatusSeeOther, rec.Code)
	assert.Equal(t, "/ops/cron/jobs/tick?done=paused", rec.Header().Get("Location"))
	assert.Equal(t, http.StatusNotFound, b.get("/ops/cron/nope").Code)

	rec = newBrowser(t, c).get("/ops/cron")
	assert.Equal(t, http.StatusMovedPermanently, rec.Code)
	assert.Equal(t, http.StatusNotFound, newBrowser(t, c).get("/elsewhere").Code)
}

// A job name with a slash, spaces and markup goes through addresses and
// forms escaped.
func TestConsole_JobName_Escaped(t *testing.T) {
	e := newMemEnv(t)
	odd := fleet.Job{Name: `reports/daily <b>"x"`, Key: `job:reports/daily <b>"x"`, Schedule: "every(1m0s)",
		Spec: "every:60000000000+0", Fingerprint: "fp-odd"}
	e.publish(t, "replica-c", odd)
	b := newBrowser(t, e.console(t, console.WithAuthorizer(allowAll)))
	body := b.get("/jobs").Body.String()
	assert.Contains(t, body, `href="/jobs/reports%2Fdaily%20%3Cb%3E%22x%22"`)
	assert.NotContains(t, body, "<b>")
	path := "/jobs/reports%2Fdaily%20%3Cb%3E%22x%22"
	tok := b.formToken(path, path+"/pause")
	rec := b.post(path+"/pause", url.Values{"note": {"x"}, "csrf_token": {tok}})
	require.Equal(t, http.StatusSeeOther, rec.Code, rec.Body.String())
	assert.NotNil(t, e.job(t, odd.Name).Pause)
}

// The history pages through the job's runs, newest first.
func TestConsole_History_Paged(t *testing.T) {
	e := newMemEnv(t)
	for i := range 45 {
		l := e.hold(t, "replica-a", tickJob)
		outcome := fleet.OutcomeSucceeded
		if i%10 == 0 {
			outcome = fleet.OutcomeGivenUp
		}
		e.finish(t, l, "replica-a", outcome, "")
	}
	b := newBrowser(t, e.console(t))
	body := b.get("/jobs/tick").Body.String()
	assert.Contains(t, body, "Runs 1 to 20 of the 45")
	assert.Contains(t, body, "5 given_up")
	assert.Contains(t, body, "40 succeeded")
	assert.Contains(t, body, `href="/jobs/tick?offset=20#history"`)
	assert.NotContains(t, body, "Newer runs")
	body = b.get("/jobs/tick?offset=40").Body.String()
	assert.Contains(t, body, "Runs 41 to 45 of the 45")
	assert.Contains(t, body, `href="/jobs/tick?offset=20#history"`)
	assert.NotContains(t, body, "Older runs")
	body = b.get("/jobs/tick?offset=400").Body.String()
	assert.Contains(t, body, "No runs at this offset")
}

// The static assets carry the security headers and the right types.
func TestConsole_Static(t *testing.T) {
	e := newMemEnv(t)
	b := newBrowser(t, e.console(t))
	for path, typ := range map[string]string{"/static/console.css": "text/css", "/static/refresh.js": "javascript", "/static/favicon.svg": "image/svg+xml"} {
		rec := b.get(path)
		require.Equal(t, http.StatusOK, rec.Code, path)
		assert.Contains(t, rec.Header().Get("Content-Type"), typ)
		assertSecurityHeaders(t, rec)
	}
	body := b.get("/").Body.String()
	assert.Contains(t, body, `data-refresh="10"`)
	body = newBrowser(t, e.console(t, console.WithRefresh(0))).get("/").Body.String()
	assert.NotContains(t, body, "data-refresh")
	assert.NotContains(t, body, "refresh.js")
}

// A store that cannot answer (here: the request was cancelled) answers
// 5xx without its error text.
func TestConsole_StoreFailed(t *testing.T) {
	e := newMemEnv(t)
	c := e.console(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, path := range []string{"/", "/jobs", "/jobs/tick"} {
		rec := httptest.NewRecorder()
		c.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodGet, path, nil))
		assert.Equal(t, http.StatusGatewayTimeout, rec.Code, path)
		assertSecurityHeaders(t, rec)
		assert.Contains(t, rec.Body.String(), "did not answer in time")
		assert.NotContains(t, rec.Body.String(), "canceled")
	}
}

// Replicas that register a job differently show as a conflict on the
// fleet, jobs and job pages.
func TestConsole_Conflict_Shown(t *testing.T) {
	e := newMemEnv(t)
	other := reportJob
	other.Schedule, other.Spec, other.Fingerprint = "every(1h0m0s)", "every:3600000000000+0", "fp-report-other"
	e.publish(t, "replica-c", other)
	b := newBrowser(t, e.console(t))
	body := b.get("/").Body.String()
	assert.Contains(t, body, "1 conflict")
	assert.Contains(t, body, `id="conflicts"`)
	assert.Contains(t, body, "every(1h0m0s)")
	assert.Contains(t, body, "…rt-other", "the fingerprints' ends")
	body = b.get("/jobs").Body.String()
	assert.Contains(t, body, "1 in conflict")
	body = b.get("/jobs/report").Body.String()
	assert.Contains(t, body, "registered this job differently")
	assert.Contains(t, body, "replica-c")
	assert.NotContains(t, b.get("/jobs/tick").Body.String(), "registered this job differently")
}
