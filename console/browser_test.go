package console_test

import (
	"context"
	"flag"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/console"
	"github.com/cronguard/cronguard/inspect"
	"github.com/cronguard/cronguard/scheduler"
)

// screenshots, when set, is the directory where the browser test saves a
// PNG of each page (docs/console is made with
// go test ./console -run TestConsole_Browser -console.screenshots ../docs/console).
var screenshots = flag.String("console.screenshots", "", "save a screenshot of each page in this directory")

// chromiumPath is Debian's chromium.
const chromiumPath = "/usr/bin/chromium"

// newBrowserContext starts a headless Chromium for the test, closed (and
// its process waited for) when the test ends.
func newBrowserContext(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath
	if _, err := os.Stat(path); err != nil {
		p, lerr := exec.LookPath("chromium")
		if lerr != nil {
			t.Fatalf("chromium not found at %s nor in PATH: the console's browser tests need it (Debian/Ubuntu: apt-get install chromium)", chromiumPath)
		}
		path = p
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox, // the tests run as root
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 800),
	)
	ctx, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancelBrowser() // closes the browser
		cancelAlloc()   // waits for its process
	})
	// The first Run starts the browser; it lives as long as ctx.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("about:blank")), "start chromium")
	return ctx
}

// step runs actions with a bound.
func step(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, waitBound)
	defer cancel()
	require.NoError(t, chromedp.Do(sctx, actions...))
}

// submit runs actions that submit a form, waits for the page it leads to
// and returns its HTTP status.
func submit(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) int64 {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, waitBound)
	defer cancel()
	resp, err := chromedp.RunResponse(sctx, actions...)
	require.NoError(t, err)
	return resp.Status
}

// text returns the text of the element sel.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, waitBound)
	defer cancel()
	s, err := chromedp.Run(sctx, chromedp.Text(chromedp.CSS(sel)))
	require.NoError(t, err)
	return s
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, waitBound)
	defer cancel()
	v, err := chromedp.Run(sctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	return v
}

// shoot saves a screenshot of the page as name.png when -console.screenshots
// is set.
func shoot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if *screenshots == "" {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, waitBound)
	defer cancel()
	png, err := chromedp.Run(sctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(*screenshots, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(*screenshots, name+".png"), png, 0o644))
}

// The console in a real browser, against a live fleet of three replicas
// on a real redis-server: the pages show the fleet; a pause with its note
// is stored and shown; a trigger runs exactly once; a force-release goes
// through its confirmation; a read-only console refuses actions; a form
// without its token, or posted from another origin, is refused.
func TestConsole_Browser_LiveFleet(t *testing.T) {
	f := newLiveFleet(t)
	slowStarted := make(chan scheduler.Run, 1)
	slow := func(ctx context.Context) error {
		run, _ := scheduler.RunFromContext(ctx)
		select {
		case slowStarted <- run:
		default:
		}
		<-ctx.Done() // runs until its lease is lost or the replica stops
		return ctx.Err()
	}
	// Jobs that do not come due during the test run only when triggered.
	yearly := scheduler.Cron("0 0 1 1 *")
	ids := []string{"replica-1", "replica-2", "replica-3"}
	for _, id := range ids {
		f.start(t, id, func(s *scheduler.Scheduler) error {
			for _, j := range []struct {
				name string
				sch  scheduler.Schedule
				fn   func(context.Context) error
			}{
				{"report", yearly, f.runs.job},
				{"cleanup", yearly, f.runs.job},
				{"nightly-export", scheduler.Cron("CRON_TZ=America/New_York 30 2 * * *"), f.runs.job},
				{"tick", scheduler.Every(time.Second), f.runs.job},
				{"warehouse-sync", yearly, slow},
			} {
				if err := s.Register(j.name, j.sch, j.fn, scheduler.WithTTL(3*time.Second)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	f.waitReplicas(t, ids...)
	waitUntil(t, "tick has a few runs in its history", func() bool {
		h, err := f.in.History(context.Background(), "tick", inspect.HistoryQuery{})
		return err == nil && h.Total >= 3
	})

	logger := slog.New(slog.DiscardHandler)
	ops, err := console.New(f.in, console.WithLogger(logger), console.WithAuthorizer(allowAll), console.WithRefresh(0),
		console.WithTriggerWait(waitBound), console.WithOperator(func(*http.Request) string { return "alice" }))
	require.NoError(t, err)
	opsSrv := httptest.NewServer(ops)
	t.Cleanup(opsSrv.Close)
	ro, err := console.New(f.in, console.WithLogger(logger), console.WithRefresh(0))
	require.NoError(t, err)
	roSrv := httptest.NewServer(ro)
	t.Cleanup(roSrv.Close)

	ctx := newBrowserContext(t)

	t.Run("pages show the fleet", func(t *testing.T) {
		step(t, ctx, chromedp.Navigate(roSrv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#replicas")))
		replicas := text(t, ctx, "#replicas")
		for _, id := range ids {
			assert.Contains(t, replicas, id)
		}
		assert.Contains(t, text(t, ctx, "header"), "read-only")
		shoot(t, ctx, "fleet")

		step(t, ctx, chromedp.Navigate(roSrv.URL+"/jobs"), chromedp.WaitVisible(chromedp.CSS("#jobs")))
		jobs := text(t, ctx, "#jobs")
		for _, name := range []string{"report", "cleanup", "nightly-export", "tick", "warehouse-sync"} {
			assert.Contains(t, jobs, name)
		}
		assert.Regexp(t, `02:30:00 E[SD]T`, jobs, "nightly-export's next occurrence in New York time")

		step(t, ctx, chromedp.Navigate(roSrv.URL+"/jobs/tick"), chromedp.WaitVisible(chromedp.CSS("#runs")))
		runs := text(t, ctx, "#runs")
		assert.Contains(t, runs, "succeeded")
		assert.Contains(t, text(t, ctx, "#actions"), "read-only")
	})

	t.Run("pause with a note", func(t *testing.T) {
		const note = "warehouse migration until 14:00 — ask ops"
		step(t, ctx, chromedp.Navigate(opsSrv.URL+"/jobs/tick"), chromedp.WaitVisible(chromedp.ID("runs")))
		shoot(t, ctx, "job")
		step(t, ctx, chromedp.Navigate(opsSrv.URL+"/jobs/cleanup"), chromedp.WaitVisible(chromedp.ID("note")))
		step(t, ctx, chromedp.SendKeys(chromedp.ID("note"), note))
		status := submit(t, ctx, chromedp.Click(chromedp.ID("pause")))
		assert.EqualValues(t, http.StatusOK, status, "the pause redirects to the job's page")
		assert.Contains(t, text(t, ctx, ".notice"), "Paused on every replica")
		assert.Contains(t, text(t, ctx, ".status"), note)

		// Stored in the fleet as `cronguard jobs` reads it (inspect.Jobs).
		jobs, err := f.in.Jobs(context.Background())
		require.NoError(t, err)
		for _, j := range jobs {
			if j.Name != "cleanup" {
				assert.Nil(t, j.Pause, "%s not paused", j.Name)
				continue
			}
			require.NotNil(t, j.Pause)
			assert.Equal(t, "alice", j.Pause.By)
			assert.Equal(t, note, j.Pause.Note)
		}
		step(t, ctx, chromedp.Navigate(opsSrv.URL+"/jobs"), chromedp.WaitVisible(chromedp.CSS("#jobs")))
		assert.Contains(t, text(t, ctx, "#jobs"), "alice: "+note)
		shoot(t, ctx, "jobs")
	})

	t.Run("trigger runs exactly once", func(t *testing.T) {
		require.Empty(t, f.runs.of("report"), "report has not run (it is due yearly)")
		step(t, ctx, chromedp.Navigate(opsSrv.URL+"/jobs/report"), chromedp.WaitVisible(chromedp.ID("trigger")))
		status := submit(t, ctx, chromedp.Click(chromedp.ID("trigger")))
		assert.EqualValues(t, http.StatusOK, status)
		outcome := text(t, ctx, "#outcome")
		assert.Contains(t, outcome, "succeeded")
		shoot(t, ctx, "triggered")

		waitUntil(t, "report's trigger consumed and its lease free", func() bool {
			j := f.job(t, "report")
			return j.PendingTriggers == 0 && j.Holder == nil && j.LastRun != nil
		})
		runs := f.runs.of("report")
		require.Len(t, runs, 1, "one run across the three replicas")
		assert.NotEmpty(t, runs[0].Trigger)
		assert.Contains(t, outcome, runs[0].Replica, "the page names the replica that ran it")
		assert.Equal(t, runs[0].Trigger, f.job(t, "report").LastRun.Trigger)
	})

	t.Run("force-release through its confirmation", func(t *testing.T) {
		_, err := f.in.Trigger(context.Background(), "warehouse-sync", "test")
		require.NoError(t, err)
		var run scheduler.Run
		select {
		case run = <-slowStarted:
		case <-time.After(waitBound):
			t.Fatal("warehouse-sync never started")
		}
		step(t, ctx, chromedp.Navigate(opsSrv.URL+"/jobs/warehouse-sync"), chromedp.WaitVisible(chromedp.ID("release")))
		page := eval[string](t, ctx, "document.documentElement.outerHTML")
		assert.NotContains(t, page, run.LeaseID, "no lease ID on the page")
		assert.NotContains(t, page, run.LeaseID[len(run.LeaseID)-6:], "nor its last characters")
		assert.Contains(t, page, run.Replica)

		status := submit(t, ctx, chromedp.Click(chromedp.ID("release")))
		assert.EqualValues(t, http.StatusOK, status)
		assert.Contains(t, text(t, ctx, ".warning"), "only safe if the job's writes are fenced")
		shoot(t, ctx, "release")
		status = submit(t, ctx, chromedp.Click(chromedp.ID("confirm-release")))
		assert.EqualValues(t, http.StatusOK, status)
		assert.Contains(t, text(t, ctx, ".notice"), fmt.Sprint(uint64(run.Fence)))
		page = eval[string](t, ctx, "document.documentElement.outerHTML")
		assert.NotContains(t, page, run.LeaseID)
		j := f.job(t, "warehouse-sync")
		if j.Holder != nil {
			assert.NotEqual(t, run.Fence, j.Holder.Fence, "the released lease is gone")
		}
	})

	t.Run("read-only console refuses actions", func(t *testing.T) {
		step(t, ctx, chromedp.Navigate(roSrv.URL+"/jobs/report"), chromedp.WaitVisible(chromedp.ID("actions")))
		assert.Equal(t, 0, eval[int](t, ctx, "document.forms.length"), "no form on a read-only console")
		shoot(t, ctx, "job-read-only")
		before := len(f.runs.of("report"))
		for _, path := range []string{"/jobs/report/trigger", "/jobs/tick/pause", "/jobs/cleanup/resume"} {
			code := eval[int](t, ctx, fmt.Sprintf(
				`fetch(%q, {method: "POST", body: new URLSearchParams({note: "x", csrf_token: "x"})}).then(r => r.status)`, path))
			assert.Equal(t, http.StatusForbidden, code, path)
		}
		assert.Equal(t, before, len(f.runs.of("report")))
		assert.Zero(t, f.job(t, "report").PendingTriggers, "nothing queued")
		assert.Nil(t, f.job(t, "tick").Pause, "tick not paused")
		assert.NotNil(t, f.job(t, "cleanup").Pause, "cleanup still paused")
	})

	t.Run("form without its token is refused", func(t *testing.T) {
		step(t, ctx, chromedp.Navigate(opsSrv.URL+"/jobs/tick"), chromedp.WaitVisible(chromedp.ID("note")))
		eval[bool](t, ctx, `(document.querySelector("#pause-form input[name=csrf_token]").remove(), true)`)
		step(t, ctx, chromedp.SendKeys(chromedp.ID("note"), "no token"))
		status := submit(t, ctx, chromedp.Click(chromedp.ID("pause")))
		assert.EqualValues(t, http.StatusForbidden, status)
		assert.Contains(t, text(t, ctx, ".error-message"), "token is missing or stale")
		assert.Nil(t, f.job(t, "tick").Pause, "tick not paused")
	})

	t.Run("form posted from another origin is refused", func(t *testing.T) {
		// A valid token and the browser's cookie: only the origin check
		// stands between this page and the pause.
		step(t, ctx, chromedp.Navigate(opsSrv.URL+"/jobs/tick"), chromedp.WaitVisible(chromedp.ID("note")))
		tok := eval[string](t, ctx, `document.querySelector("#pause-form input[name=csrf_token]").value`)
		evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_ = evilPage.Execute(w, map[string]string{"Action": opsSrv.URL + "/jobs/tick/pause", "Token": tok})
		}))
		defer evil.Close()
		step(t, ctx, chromedp.Navigate(evil.URL), chromedp.WaitVisible(chromedp.ID("go")))
		status := submit(t, ctx, chromedp.Click(chromedp.ID("go")))
		assert.EqualValues(t, http.StatusForbidden, status)
		assert.Contains(t, text(t, ctx, ".error-message"), "Cross-origin request refused")
		assert.Nil(t, f.job(t, "tick").Pause, "tick not paused")
	})

	t.Run("resume", func(t *testing.T) {
		step(t, ctx, chromedp.Navigate(opsSrv.URL+"/jobs/cleanup"), chromedp.WaitVisible(chromedp.ID("resume")))
		status := submit(t, ctx, chromedp.Click(chromedp.ID("resume")))
		assert.EqualValues(t, http.StatusOK, status)
		assert.Contains(t, text(t, ctx, ".notice"), "Resumed")
		assert.Nil(t, f.job(t, "cleanup").Pause)
	})
}

// evilPage is another site's page with a form aimed at the console.
var evilPage = template.Must(template.New("evil").Parse(`<!doctype html><title>evil</title>
<form method="post" action="{{.Action}}"><input type="hidden" name="csrf_token" value="{{.Token}}">
<input type="hidden" name="note" value="pwned"><button id="go" type="submit">win a prize</button></form>`))
