// Package console is a web console for a fleet of cronguard schedulers: an
// http.Handler that shows the fleet (replicas, versions, conflicts), its
// jobs (state, the replica running each, last run and outcome, next
// occurrences in the job's time zone, pauses with their notes) and each
// job's run history, and, when the host allows it, pauses, resumes,
// triggers and force-releases jobs.
//
//	in, err := inspect.New(store) // a lease/redislease Store on the fleet's Redis and key prefix
//	c, err := console.New(in)     // read-only: every action answers 403
//	mux.Handle("/", c)
//
// The cronguard command serves it too (cronguard serve).
//
// # Where it reads, and what it shows
//
// Every page is read from the store, through package inspect, at the
// moment it is served: the registry of live replicas and each job's state
// (the live lease, the last run's status, the pause, the pending
// triggers, the run history). The console never asks a replica, and shows
// nothing a replica keeps only in its memory. The jobs page counts, over
// each job's newest 100 runs in its history (one history read per job),
// the occurrences that ran nowhere before them (each run records how many
// the ledger reported when it won, fleet.RunRecord.Missed) and the
// occurrences given up; missed occurrences older than those runs, and
// those of a job whose runs all lost their lease, are only in the
// replicas' metrics (otelcronguard). Times of the store (a lease's start and
// expiry, a run's start, a pause) are shown in UTC with their distance
// from the store's clock; a job's next occurrences in the job's own time
// zone (its cron expression's location; UTC for Every and At schedules).
//
// No page shows a lease ID, a lease key, a password or a secret: a running
// lease is shown by its holder, its fence and the last characters of its
// ID's hash (inspect.Holder.LeaseHash), which identify it without granting
// anything. Text that comes from the store (pause notes, error lines,
// holder labels) is escaped by html/template.
//
// # Actions, and who may take them
//
// A Console is read-only unless the host passes an authorizer
// (WithAuthorizer): without one, every action answers 403 Forbidden and
// changes nothing, and the pages show no action forms. The authorizer is
// asked on every action request (and, to decide which forms to show, on
// the job page's request); authenticating the person is the host's
// affair, in middleware in front of the console. Who asked is recorded
// with each pause, trigger and force-release (WithOperator).
//
// Actions are POST forms, protected against cross-site request forgery
// twice: http.CrossOriginProtection refuses requests a browser marks as
// cross-origin (Sec-Fetch-Site, Origin), and every form carries a token,
// an HMAC under the console's secret (random per Console unless
// WithSecret) of a random value kept in a SameSite=Strict cookie, of the
// action and of the job. A request that fails either check answers 403
// Forbidden and changes nothing. Bad input (an unknown job, a pause note
// that is empty, longer than fleet.MaxPauseNoteBytes, not UTF-8 or with
// control characters, a body over 16 KiB) answers 4xx and changes nothing.
//
// Force-release is behind a confirmation page that says what it risks:
// the holder is not stopped and may still be running when another replica
// takes the lease, so it is only safe for jobs whose writes are fenced
// (package fencing).
//
// # Responses
//
// Pages are server-rendered HTML (html/template) with embedded assets and
// work without JavaScript; a small script, when JavaScript is on, reloads
// the fleet, jobs and job pages every WithRefresh period unless the reader
// is typing in a form. Every response carries a Content-Security-Policy
// of default-src 'self' with frame-ancestors 'none', X-Frame-Options DENY,
// X-Content-Type-Options nosniff, Referrer-Policy same-origin, and pages
// Cache-Control no-store. The console sends no CORS headers.
//
// # What it does not guarantee
//
// A page is a snapshot: runs start and end between the read and the
// display. The registry is advisory (see package inspect): a replica that
// died stays listed for up to three of its refresh periods, and a job that
// no live replica registers is not shown. A trigger's page waits a bounded
// time (WithTriggerWait) for the run's end; the run may end later.
package console
