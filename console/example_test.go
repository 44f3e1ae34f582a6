package console_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/cronguard/cronguard/console"
	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/inspect"
	"github.com/cronguard/cronguard/lease/memory"
)

// A console mounted under /cron in a service's mux, letting signed-in
// operators pause, resume and trigger jobs, but not force-release them.
// (The store here is in memory; a fleet's is a lease/redislease Store.)
func ExampleNew() {
	store, _ := memory.New()
	_, _ = store.PublishReplica(context.Background(), fleet.Replica{ID: "replica-1", Started: time.Now(), Refresh: 5 * time.Second,
		Jobs: []fleet.Job{{Name: "report", Key: "job:report", Schedule: "every(1h0m0s)", Spec: "every:3600000000000+0", Fingerprint: "fp"}}},
		time.Minute)
	in, _ := inspect.New(store)

	operator := func(r *http.Request) string { return r.Header.Get("X-Signed-In-User") } // set by your authentication
	c, err := console.New(in,
		console.WithBasePath("/cron"),
		console.WithAuthorizer(func(r *http.Request, a console.Action) bool {
			return operator(r) != "" && a.Kind != console.ActionForceRelease
		}),
		console.WithOperator(operator),
		console.WithLogger(slog.New(slog.DiscardHandler)),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/cron/", c)

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/cron/jobs/report", nil))
	fmt.Println(rec.Code, rec.Header().Get("X-Frame-Options"))
	// Output: 200 DENY
}
