package console

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/inspect"
	"github.com/cronguard/cronguard/lease"
)

// maxFormBytes bounds an action's request body: a pause note is at most
// fleet.MaxPauseNoteBytes, percent-encoded up to three times longer.
const maxFormBytes = 16 << 10

// action wraps an action's handler with the checks every action passes,
// in this order, before it changes anything:
//
//  1. the request is not cross-origin (http.CrossOriginProtection): 403;
//  2. the authorizer allows it (a read-only console allows nothing): 403;
//  3. its form is at most maxFormBytes (413) and parses (400);
//  4. its form carries the token of this action, job and cookie: 403;
//  5. the job name is valid text (400) and the operator's name a valid
//     holder label (500).
func (c *Console) action(kind ActionKind, do func(http.ResponseWriter, *http.Request, Action, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a := Action{Kind: kind, Job: r.PathValue("name")}
		if err := c.origins.Check(r); err != nil {
			c.refuse(w, r, a, "Cross-origin request refused: actions are taken only from the console's own pages.", err)
			return
		}
		if c.authorize == nil {
			c.refuse(w, r, a, "This console is read-only: it takes no action.", nil)
			return
		}
		if !c.authorize(r, a) {
			c.refuse(w, r, a, "You may not take this action on this job.", nil)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if err := r.ParseForm(); err != nil {
			var big *http.MaxBytesError
			if errors.As(err, &big) {
				c.fail(w, r, http.StatusRequestEntityTooLarge, "The form is too large.", nil, a.Job)
				return
			}
			c.fail(w, r, http.StatusBadRequest, "The form could not be read.", nil, a.Job)
			return
		}
		if !c.tokens.check(r, a) {
			c.refuse(w, r, a, "The form's token is missing or stale: go back, reload the page and submit it again.", nil)
			return
		}
		if _, ok := c.jobName(w, r); !ok {
			return
		}
		by, ok := c.by(r)
		if !ok {
			c.fail(w, r, http.StatusInternalServerError, "The console cannot name who you are (its operator name is not a valid label): nothing changed.",
				errors.New("console: WithOperator returned an empty name or one that fails lease.ValidateOwner"), a.Job)
			return
		}
		do(w, r, a, by)
	}
}

// refuse answers 403 Forbidden and logs the refusal.
func (c *Console) refuse(w http.ResponseWriter, r *http.Request, a Action, msg string, err error) {
	attrs := []any{slog.String("action", string(a.Kind)), slog.String("job", a.Job), slog.String("remote", r.RemoteAddr)}
	if err != nil {
		attrs = append(attrs, slog.Any("error", err))
	}
	c.log.Warn("console: action refused: "+msg, attrs...)
	c.fail(w, r, http.StatusForbidden, msg, nil)
}

// done redirects to the job's page, which shows the notice of code.
func (c *Console) done(w http.ResponseWriter, r *http.Request, job, code string) {
	http.Redirect(w, r, c.jobURL(job)+"?done="+code, http.StatusSeeOther)
}

func (c *Console) doPause(w http.ResponseWriter, r *http.Request, a Action, by string) {
	note := r.PostForm.Get("note")
	switch {
	case strings.TrimSpace(note) == "":
		c.fail(w, r, http.StatusBadRequest, "A pause needs a note: say why the job is paused, for whoever finds it paused. Nothing changed.", nil, a.Job)
		return
	case len(note) > fleet.MaxPauseNoteBytes:
		c.fail(w, r, http.StatusBadRequest, "The note is too long: at most "+strconv.Itoa(fleet.MaxPauseNoteBytes)+" bytes, got "+strconv.Itoa(len(note))+". Nothing changed.", nil, a.Job)
		return
	case !utf8.ValidString(note):
		c.fail(w, r, http.StatusBadRequest, "The note is not valid UTF-8 text. Nothing changed.", nil, a.Job)
		return
	case strings.ContainsFunc(note, unicode.IsControl):
		c.fail(w, r, http.StatusBadRequest, "The note must be one line of text, without control characters (tabs, line breaks, escapes). Nothing changed.", nil, a.Job)
		return
	}
	if err := c.in.Pause(r.Context(), a.Job, by, note); err != nil {
		c.storeFailed(w, r, err, a.Job)
		return
	}
	c.done(w, r, a.Job, "paused")
}

func (c *Console) doResume(w http.ResponseWriter, r *http.Request, a Action, _ string) {
	was, err := c.in.Resume(r.Context(), a.Job)
	if err != nil {
		c.storeFailed(w, r, err, a.Job)
		return
	}
	if !was {
		c.done(w, r, a.Job, "not_paused")
		return
	}
	c.done(w, r, a.Job, "resumed")
}

// triggeredPage is a trigger's result page's data.
type triggeredPage struct {
	Job, JobURL          string
	ID, By               string
	QueuedAt, ExpiresAt  string
	Waited               string // how long the page waited for the run, "" when it did not
	Done, OK, TimedOut   bool
	Outcome, Error       string
	Replica, Took, Fence string
}

func (c *Console) doTrigger(w http.ResponseWriter, r *http.Request, a Action, by string) {
	var opts []inspect.TriggerOption
	if c.triggerWait > 0 {
		opts = append(opts, inspect.WithWait(c.triggerWait))
	}
	res, err := c.in.Trigger(r.Context(), a.Job, by, opts...)
	timedOut := errors.Is(err, inspect.ErrWaitTimeout)
	switch {
	case errors.Is(err, inspect.ErrPaused):
		c.fail(w, r, http.StatusConflict, "The job is paused: resume it before triggering it. Nothing was queued.", nil, a.Job)
		return
	case err != nil && res.Trigger.ID == "":
		c.storeFailed(w, r, err, a.Job)
		return
	case err != nil && !timedOut:
		// Queued, but the wait (or the announcement) failed: show what
		// was queued.
		c.log.Warn("console: trigger queued, but the console could not follow it", slog.String("job", a.Job), slog.Any("error", err))
	}
	t := res.Trigger
	p := triggeredPage{Job: a.Job, JobURL: c.jobURL(a.Job), ID: t.ID, By: clean(t.By),
		QueuedAt: utc(t.At), ExpiresAt: utc(t.Expires), Done: res.Done, OK: res.Succeeded(), TimedOut: timedOut,
		Outcome: res.Outcome, Error: clean(res.Error)}
	if c.triggerWait > 0 {
		p.Waited = span(c.triggerWait)
	}
	if run := res.Run; run != nil {
		p.Replica, p.Took, p.Fence = run.Replica, span(run.Duration), fence(run.Fence)
		if p.Replica == "" {
			p.Replica = clean(run.Owner)
		}
	}
	c.render(w, r, http.StatusOK, pageTriggered, layout{Title: "Triggered " + a.Job, Nav: "jobs", Page: p})
}

// releasedPage is a force-release's result page's data.
type releasedPage struct {
	Job, JobURL             string
	Owner, Fence, LeaseHash string
	AcquiredAt              string
}

func (c *Console) doRelease(w http.ResponseWriter, r *http.Request, a Action, by string) {
	if r.PostForm.Get("confirm") != "release" {
		c.fail(w, r, http.StatusBadRequest, "A force-release must be confirmed on its confirmation page. Nothing changed.", nil, a.Job)
		return
	}
	info, err := c.in.ForceRelease(r.Context(), a.Job, by)
	if errors.Is(err, inspect.ErrNotHeld) {
		c.fail(w, r, http.StatusConflict, "No live lease holds the job now (its run ended, or its lease expired): nothing was released.", nil, a.Job)
		return
	}
	if err != nil {
		c.storeFailed(w, r, err, a.Job)
		return
	}
	p := releasedPage{Job: a.Job, JobURL: c.jobURL(a.Job), Owner: clean(info.Owner), Fence: fence(info.Fence),
		LeaseHash: lease.ShortID(info.IDHash), AcquiredAt: utc(info.AcquiredAt.UTC())}
	c.render(w, r, http.StatusOK, pageReleased, layout{Title: "Force-released " + a.Job, Nav: "jobs", Page: p})
}
