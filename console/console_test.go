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

// The jobs page counts, over each job's newest runs, the occurrences that
// ran nowhere and those given up; the job page shows each run's missed
// count.
func TestConsole_Jobs_MissedAndGivenUp(t *testing.T) {
	e := newMemEnv(t)
	for i, outcome := range []string{fleet.OutcomeSucceeded, fleet.OutcomeGivenUp, fleet.OutcomeSucceeded, fleet.OutcomeGivenUp} {
		l := e.hold(t, "replica-a", tickJob)
		_, err := e.store.ReleaseWithStatus(t.Context(), l, fleet.Status{Occurrence: l.AcquiredAt, Owner: l.Owner,
			Fence: l.Fence, Started: l.AcquiredAt, Duration: time.Second, Outcome: outcome, Replica: "replica-a", Attempt: 1,
			Missed: i * 2}) // 0, 2, 4, 6
		require.NoError(t, err)
	}
	e.finish(t, e.hold(t, "replica-a", reportJob), "replica-a", fleet.OutcomeSucceeded, "")
	b := newBrowser(t, e.console(t))

	body := b.get("/jobs").Body.String()
	assert.Contains(t, body, "<th title=\"occurrences that ran nowhere, before the job's newest 100 runs\">Missed</th>")
	assert.Contains(t, body, ">Given up</th>")
	row := func(name string) string {
		t.Helper()
		start := strings.Index(body, `<a href="/jobs/`+name+`">`)
		require.GreaterOrEqual(t, start, 0, body)
		end := strings.Index(body[start:], "</tr>")
		require.Greater(t, end, 0)
		return body[start : start+end]
	}
	tick := row("tick")
	assert.Contains(t, tick, `<td class="missed"><span class="bad">12</span></td>`, "the sum of the runs' missed counts")
	assert.Contains(t, tick, `<td class="given-up"><span class="bad">2</span></td>`, "the runs given up")
	report := row("report")
	assert.Contains(t, report, `<td class="missed">0</td>`)
	assert.Contains(t, report, `<td class="given-up">0</td>`)

	body = b.get("/jobs/tick").Body.String()
	assert.Contains(t, body, "<th>Missed before</th>")
	assert.Contains(t, body, `<span class="bad">12 missed</span>`, "the tally adds up the missed counts")
	assert.Contains(t, body, `<td><span class="bad">6</span></td>`, "the newest run missed 6")
}
