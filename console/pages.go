package console

import (
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/inspect"
	"github.com/cronguard/cronguard/lease"
)

// How much of the store's text the lists show; the job page shows all.
const (
	listNoteRunes  = 60
	listErrorRunes = 80
	// nextShown is how many next occurrences the job page lists.
	nextShown = 5
	// maxJobNameBytes bounds a job name in an address: longer ones are
	// refused before any store read.
	maxJobNameBytes = 1024
)

// fleetPage is the fleet page's data: the registry, nothing else.
type fleetPage struct {
	Replicas  []replicaRow
	Jobs      int
	Versions  []string
	Conflicts []conflictRow
}

type replicaRow struct {
	ID, Version          string
	Started, StartedAgo  string
	Refresh              string
	Expires, ExpiresFrom string
	Jobs                 []jobLink
}

type jobLink struct{ Name, URL string }

type conflictRow struct {
	Job, URL      string
	Registrations []registrationRow
}

type registrationRow struct {
	Replica, Schedule, Fingerprint string
	OtherKey                       bool // its lease key differs from the first registration's
}

func (c *Console) serveFleet(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rs, err := c.in.Replicas(r.Context())
	unreadable, err := c.leftOut(err)
	if err != nil {
		c.storeFailed(w, r, err, "")
		return
	}
	took := time.Since(start)
	now := c.now()
	p := fleetPage{}
	names := map[string][]fleet.Job{}
	var order []string
	versions := map[string]bool{}
	for _, rep := range rs {
		row := replicaRow{
			ID: rep.ID, Version: rep.Version, Started: utc(rep.Started), StartedAgo: relative(rep.Started, now),
			Refresh: span(rep.Refresh), Expires: utc(rep.Expires), ExpiresFrom: relative(rep.Expires, now),
		}
		for _, j := range rep.Jobs {
			row.Jobs = append(row.Jobs, jobLink{Name: j.Name, URL: c.jobURL(j.Name)})
			if _, seen := names[j.Name]; !seen {
				order = append(order, j.Name)
			}
			names[j.Name] = append(names[j.Name], j)
		}
		slices.SortFunc(row.Jobs, func(a, b jobLink) int { return strings.Compare(a.Name, b.Name) })
		p.Replicas = append(p.Replicas, row)
		versions[rep.Version] = true
	}
	p.Jobs = len(order)
	for v := range versions {
		p.Versions = append(p.Versions, v)
	}
	slices.Sort(p.Versions)
	p.Conflicts = c.conflicts(rs)
	c.render(w, r, http.StatusOK, pageFleet, layout{Title: "Fleet", Nav: "fleet", Refresh: c.refreshSeconds(), Page: p, Took: took, Unreadable: unreadable})
}

// conflicts finds, in the registry alone, the jobs whose live replicas
// registered them differently (fingerprint or lease key), as inspect.Job's
// Conflict says: one row per job, its registrations in replica ID order.
func (c *Console) conflicts(rs []fleet.Replica) []conflictRow {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b fleet.Replica) int { return strings.Compare(a.ID, b.ID) })
	type reg struct {
		replica string
		job     fleet.Job
	}
	by := map[string][]reg{}
	var names []string
	for _, r := range rs {
		for _, j := range r.Jobs {
			if _, seen := by[j.Name]; !seen {
				names = append(names, j.Name)
			}
			by[j.Name] = append(by[j.Name], reg{r.ID, j})
		}
	}
	slices.Sort(names)
	var out []conflictRow
	for _, name := range names {
		regs := by[name]
		first := regs[0].job
		if !slices.ContainsFunc(regs[1:], func(g reg) bool {
			return g.job.Fingerprint != first.Fingerprint || g.job.Key != first.Key
		}) {
			continue
		}
		row := conflictRow{Job: name, URL: c.jobURL(name)}
		for _, g := range regs {
			row.Registrations = append(row.Registrations, registrationRow{Replica: g.replica, Schedule: g.job.Schedule,
				Fingerprint: shortFingerprint(g.job.Fingerprint), OtherKey: g.job.Key != first.Key})
		}
		out = append(out, row)
	}
	return out
}

// jobRow is a job as the jobs list shows it.
type jobRow struct {
	Name, URL, Schedule string
	Replicas            int
	Conflict            bool
	// RunningOn is the replica holding the lease (or its holder label),
	// and LeaseLeft the time left on the lease; "" when none holds it.
	RunningOn, LeaseLeft string
	Paused               bool
	PausedBy, PauseNote  string
	Last                 *lastRun
	Next, NextIn         string
	Zone                 string
	PendingTriggers      int
	// Missed and GivenUp count, among the job's newest Tallied runs, the
	// occurrences that ran nowhere before them and the runs given up
	// (jobs page only).
	Missed, GivenUp, Tallied int
}

type lastRun struct {
	Outcome, Class, Took, Ended, Where, Error string
	Triggered                                 bool
}

func (c *Console) row(j inspect.Job, full bool) jobRow {
	row := jobRow{Name: j.Name, URL: c.jobURL(j.Name), Schedule: j.Schedule, Replicas: len(j.Registrations),
		Conflict: j.Conflict, PendingTriggers: j.PendingTriggers}
	if h := j.Holder; h != nil {
		row.RunningOn = holderName(h)
		row.LeaseLeft = "expiring"
		if h.Left > 0 {
			row.LeaseLeft = span(h.Left) + " left"
		}
	}
	if p := j.Pause; p != nil {
		row.Paused, row.PausedBy, row.PauseNote = true, clean(p.By), clean(p.Note)
		if !full {
			row.PauseNote = shorten(row.PauseNote, listNoteRunes)
		}
	}
	if r := j.LastRun; r != nil {
		where := r.Replica
		if where == "" {
			where = r.Owner
		}
		row.Last = &lastRun{Outcome: r.Outcome, Took: span(r.Duration), Ended: relative(r.Ended(), j.Now),
			Where: clean(where), Error: clean(r.Error), Class: outcomeClass(r.Outcome), Triggered: r.Trigger != ""}
		if !full {
			row.Last.Error = shorten(row.Last.Error, listErrorRunes)
		}
	}
	loc := zoneOf(j.Spec)
	row.Zone = loc.String()
	if !j.Next.IsZero() {
		row.Next, row.NextIn = inZone(j.Next, loc), relative(j.Next, j.Now)
	}
	return row
}

// holderName names who holds a lease: its replica, else its label.
func holderName(h *inspect.Holder) string {
	if h.Replica != "" {
		return h.Replica
	}
	return clean(h.Owner)
}

// jobsPage is the jobs page's data.
type jobsPage struct {
	Jobs                      []jobRow
	Running, Paused, Conflict int
	// Tallied is how many of each job's newest runs the missed and given
	// up columns count over.
	Tallied int
}

func (c *Console) serveJobs(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	jobs, err := c.in.Jobs(r.Context())
	unreadable, err := c.leftOut(err)
	if err != nil {
		c.storeFailed(w, r, err, "")
		return
	}
	hists, err := c.in.Histories(r.Context(), jobs, inspect.HistoryQuery{Limit: historyTally})
	if err != nil {
		c.storeFailed(w, r, err, "")
		return
	}
	took := time.Since(start)
	p := jobsPage{Tallied: historyTally}
	for i, j := range jobs {
		row := c.row(j, false)
		t := tallyRuns(hists[i].Runs)
		row.Missed, row.GivenUp, row.Tallied = t.missed, t.outcomes[fleet.OutcomeGivenUp], len(hists[i].Runs)
		if row.RunningOn != "" {
			p.Running++
		}
		if row.Paused {
			p.Paused++
		}
		if row.Conflict {
			p.Conflict++
		}
		p.Jobs = append(p.Jobs, row)
	}
	c.render(w, r, http.StatusOK, pageJobs, layout{Title: "Jobs", Nav: "jobs", Refresh: c.refreshSeconds(), Page: p, Took: took, Unreadable: unreadable})
}

// jobPage is a job page's data.
type jobPage struct {
	jobRow
	StoreNow        string
	NextOccurrences []string
	Registrations   []registrationRow
	Holder          *holderView
	LastOccurrence  string
	LastRun         *runView
	PausedAt        string
	PausedAgo       string
	Notice          string
	Forms           forms
	MaxNoteBytes    int
	History         *historyView
}

type holderView struct {
	Name, Owner, Fence, LeaseHash string
	Since, SinceAgo, Left         string
}

type runView struct {
	lastRun
	Occurrence, Started, Fence, Trigger string
}

// forms are the action forms a job page shows: nil when the request may
// not take the action (or it makes no sense now).
type forms struct {
	Pause, Resume, Trigger, Release *form
}

type form struct {
	Action, Token string
}

// notices are the messages an action's redirect asks the job page to
// show, by the code in its "done" parameter; no text of the request is
// ever shown.
var notices = map[string]string{
	"paused":     "Paused on every replica. A run in progress is not stopped: it finishes as usual. No occurrence starts until the job is resumed.",
	"resumed":    "Resumed. The occurrences skipped while the job was paused are not run; the next one runs as usual.",
	"not_paused": "The job was not paused: nothing changed.",
}

func (c *Console) serveJob(w http.ResponseWriter, r *http.Request) {
	name, ok := c.jobName(w, r)
	if !ok {
		return
	}
	offset, ok := historyOffset(r)
	if !ok {
		c.fail(w, r, http.StatusBadRequest, "The history's offset must be a whole number from 0 to "+strconv.Itoa(fleet.MaxHistoryLimit)+".", nil, name)
		return
	}
	start := time.Now()
	j, err := c.in.Job(r.Context(), name)
	unreadable, err := c.leftOut(err)
	if err != nil {
		c.storeFailed(w, r, err, name)
		return
	}
	hist, herr := c.history(r, name, offset)
	if herr != nil {
		c.storeFailed(w, r, herr, name)
		return
	}
	took := time.Since(start)
	p := jobPage{jobRow: c.row(j, true), StoreNow: utc(j.Now), MaxNoteBytes: fleet.MaxPauseNoteBytes,
		Notice: notices[r.URL.Query().Get("done")], History: hist}
	loc := zoneOf(j.Spec)
	for _, t := range nextOccurrences(j.Spec, j.Now, nextShown) {
		p.NextOccurrences = append(p.NextOccurrences, inZone(t, loc)+" ("+relative(t, j.Now)+")")
	}
	first := j.Registrations[0].Job
	for _, g := range j.Registrations {
		p.Registrations = append(p.Registrations, registrationRow{Replica: g.Replica, Schedule: g.Job.Schedule,
			Fingerprint: shortFingerprint(g.Job.Fingerprint), OtherKey: g.Job.Key != first.Key})
	}
	if h := j.Holder; h != nil {
		p.Holder = &holderView{Name: holderName(h), Owner: clean(h.Owner), Fence: fence(h.Fence), LeaseHash: h.LeaseHash,
			Since: utc(h.AcquiredAt), SinceAgo: relative(h.AcquiredAt, j.Now), Left: p.LeaseLeft}
	}
	if !j.LastOccurrence.IsZero() {
		p.LastOccurrence = utc(j.LastOccurrence) + " (" + relative(j.LastOccurrence, j.Now) + ")"
	}
	if r := j.LastRun; r != nil {
		p.LastRun = &runView{lastRun: *p.Last, Occurrence: utc(r.Occurrence), Started: utc(r.Started),
			Fence: fence(r.Fence), Trigger: r.Trigger}
	}
	if pz := j.Pause; pz != nil {
		p.PausedAt, p.PausedAgo = utc(pz.At), relative(pz.At, j.Now)
	}
	p.Forms = c.formsFor(w, r, j)
	c.render(w, r, http.StatusOK, pageJob, layout{Title: j.Name, Nav: "jobs", Refresh: c.refreshSeconds(), Page: p, Took: took, Unreadable: unreadable})
}

// formsFor returns the forms the request may use on job j, with their
// tokens (setting the token cookie if the request has none).
func (c *Console) formsFor(w http.ResponseWriter, r *http.Request, j inspect.Job) forms {
	var f forms
	if c.authorize == nil {
		return f
	}
	var nonce string
	mk := func(kind ActionKind, path string) *form {
		a := Action{Kind: kind, Job: j.Name}
		if !c.allowed(r, a) {
			return nil
		}
		if nonce == "" {
			nonce = c.tokens.nonce(w, r)
		}
		return &form{Action: c.jobURL(j.Name) + "/" + path, Token: c.tokens.token(nonce, a)}
	}
	if j.Pause == nil {
		f.Pause = mk(ActionPause, "pause")
		f.Trigger = mk(ActionTrigger, "trigger")
	} else {
		f.Resume = mk(ActionResume, "resume")
	}
	if j.Holder != nil && c.allowed(r, Action{Kind: ActionForceRelease, Job: j.Name}) {
		// A link to the confirmation page, which has the form.
		f.Release = &form{Action: c.jobURL(j.Name) + "/release"}
	}
	return f
}

// releasePage is the force-release confirmation page's data.
type releasePage struct {
	Job, JobURL string
	Holder      *holderView
	Form        *form
}

func (c *Console) serveReleaseConfirm(w http.ResponseWriter, r *http.Request) {
	name, ok := c.jobName(w, r)
	if !ok {
		return
	}
	a := Action{Kind: ActionForceRelease, Job: name}
	if !c.allowed(r, a) {
		c.refuse(w, r, a, "This console may not force-release this job", nil)
		return
	}
	j, err := c.in.Job(r.Context(), name)
	unreadable, err := c.leftOut(err)
	if err != nil {
		c.storeFailed(w, r, err, name)
		return
	}
	p := releasePage{Job: j.Name, JobURL: c.jobURL(j.Name)}
	if h := j.Holder; h != nil {
		p.Holder = &holderView{Name: holderName(h), Owner: clean(h.Owner), Fence: fence(h.Fence), LeaseHash: h.LeaseHash,
			Since: utc(h.AcquiredAt), SinceAgo: relative(h.AcquiredAt, j.Now)}
		p.Holder.Left = "expiring"
		if h.Left > 0 {
			p.Holder.Left = span(h.Left) + " left"
		}
		p.Form = &form{Action: c.jobURL(j.Name) + "/release", Token: c.tokens.token(c.tokens.nonce(w, r), a)}
	}
	c.render(w, r, http.StatusOK, pageReleaseConfirm, layout{Title: "Force-release " + j.Name, Nav: "jobs", Page: p, Unreadable: unreadable})
}

// jobName returns the job name in the request's address, or answers 400
// when it cannot be one (empty, too long, not UTF-8, control characters).
func (c *Console) jobName(w http.ResponseWriter, r *http.Request) (string, bool) {
	name := r.PathValue("name")
	switch {
	case name == "":
		c.fail(w, r, http.StatusBadRequest, "The address names no job.", nil)
	case len(name) > maxJobNameBytes:
		c.fail(w, r, http.StatusBadRequest, "The job name in the address is too long to be a job's.", nil)
	case !utf8.ValidString(name) || strings.ContainsFunc(name, unicode.IsControl):
		c.fail(w, r, http.StatusBadRequest, "The job name in the address is not valid UTF-8 text without control characters.", nil)
	default:
		return name, true
	}
	return "", false
}

// storeFailed answers an error from the Inspector: 404 for an unknown job,
// 400 for a refused argument, 503/504/502 when the store could not serve.
// The error itself is logged, never shown.
// leftOut splits the error of an Inspector read: one that wraps a
// *fleet.UnreadableError came with what the readable registry entries
// say, which the page shows with the replicas left out named (and logged
// at debug: every refresh of every page reads them); any other error is
// returned.
func (c *Console) leftOut(err error) ([]string, error) {
	var u *fleet.UnreadableError
	if err == nil || !errors.As(err, &u) {
		return nil, err
	}
	c.log.Debug("console: registry entries left out of a page", slog.Any("replicas", u.Replicas), slog.Any("error", u))
	return u.Replicas, nil
}

func (c *Console) storeFailed(w http.ResponseWriter, r *http.Request, err error, job string) {
	switch {
	case errors.Is(err, inspect.ErrUnknownJob):
		c.fail(w, r, http.StatusNotFound, "No live replica has registered this job. The fleet's jobs are what its live replicas registered: see the jobs page.", nil)
	case errors.Is(err, lease.ErrInvalidArgument):
		c.fail(w, r, http.StatusBadRequest, "The store refused the request's arguments.", err, job)
	case errors.Is(err, lease.ErrAuth):
		c.fail(w, r, http.StatusBadGateway, "The store refused the console's credentials or command (Redis ACL): see docs/redis-acl.md for the console's user.", err, job)
	case errors.Is(err, lease.ErrTimeout), errors.Is(err, lease.ErrAborted):
		c.fail(w, r, http.StatusGatewayTimeout, "The store did not answer in time.", err, job)
	case errors.Is(err, lease.ErrUnavailable):
		c.fail(w, r, http.StatusServiceUnavailable, "The store cannot be reached now.", err, job)
	default:
		c.fail(w, r, http.StatusInternalServerError, "The store's answer could not be read.", err, job)
	}
}
