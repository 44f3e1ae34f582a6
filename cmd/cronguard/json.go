package main

import (
	"encoding/json"
	"io"
	"time"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/inspect"
	"github.com/cronguard/cronguard/lease"
)

// The JSON that --json prints. Field names are stable: new fields may be
// added, none renamed or removed. Times are RFC 3339 in UTC, to the
// millisecond; durations are whole milliseconds in fields ending in Ms;
// an absent value is null. jsonHelp documents them.

type replicasJSON struct {
	Replicas []replicaJSON `json:"replicas"`
	// Unreadable are the live replicas whose registry entries could not
	// be read, left out of Replicas (exit 1).
	Unreadable []string `json:"unreadable"`
}

type replicaJSON struct {
	ID        string    `json:"id"`
	Version   string    `json:"version"`
	Started   time.Time `json:"started"`
	RefreshMs int64     `json:"refreshMs"`
	Expires   time.Time `json:"expires"`
	Jobs      []string  `json:"jobs"`
}

type jobsJSON struct {
	Jobs []jobJSON `json:"jobs"`
	// Unreadable are the live replicas whose registry entries could not
	// be read: their jobs are left out of Jobs (exit 1).
	Unreadable []string `json:"unreadable"`
}

type jobJSON struct {
	Name            string             `json:"name"`
	Key             string             `json:"key"`
	Schedule        string             `json:"schedule"`
	Replicas        []string           `json:"replicas"`
	Conflict        bool               `json:"conflict"`
	Registrations   []registrationJSON `json:"registrations"`
	Now             time.Time          `json:"now"`
	Holder          *holderJSON        `json:"holder"`
	LastOccurrence  *time.Time         `json:"lastOccurrence"`
	LastRun         *runJSON           `json:"lastRun"`
	Paused          *pauseJSON         `json:"paused"`
	PendingTriggers int                `json:"pendingTriggers"`
	Next            *time.Time         `json:"next"`
}

type registrationJSON struct {
	Replica     string `json:"replica"`
	Schedule    string `json:"schedule"`
	Key         string `json:"key"`
	Fingerprint string `json:"fingerprint"`
}

type holderJSON struct {
	Owner      string    `json:"owner"`
	Replica    string    `json:"replica"`
	Fence      uint64    `json:"fence"`
	LeaseHash  string    `json:"leaseHash"`
	AcquiredAt time.Time `json:"acquiredAt"`
	ExpiresAt  time.Time `json:"expiresAt"`
	LeftMs     int64     `json:"leftMs"`
}

type runJSON struct {
	Occurrence time.Time `json:"occurrence"`
	Owner      string    `json:"owner"`
	Replica    string    `json:"replica"`
	Fence      uint64    `json:"fence"`
	Started    time.Time `json:"started"`
	DurationMs int64     `json:"durationMs"`
	Outcome    string    `json:"outcome"`
	Error      string    `json:"error"`
	Trigger    string    `json:"trigger"`
}

type pauseJSON struct {
	By    string    `json:"by"`
	Note  string    `json:"note"`
	Since time.Time `json:"since"`
}

type pausedJSON struct {
	Job    string     `json:"job"`
	Paused *pauseJSON `json:"paused"`
}

type resumedJSON struct {
	Job       string     `json:"job"`
	WasPaused bool       `json:"wasPaused"`
	Next      *time.Time `json:"next"`
}

type triggerJSON struct {
	ID        string    `json:"id"`
	By        string    `json:"by"`
	QueuedAt  time.Time `json:"queuedAt"`
	ExpiresAt time.Time `json:"expiresAt"`
}

type triggeredJSON struct {
	Job     string      `json:"job"`
	Trigger triggerJSON `json:"trigger"`
	Waited  bool        `json:"waited"`
	Done    bool        `json:"done"`
	Outcome string      `json:"outcome"`
	Error   string      `json:"error"`
	Run     *runJSON    `json:"run"`
}

type releasedJSON struct {
	Job      string      `json:"job"`
	Released releaseJSON `json:"released"`
}

type releaseJSON struct {
	Owner      string    `json:"owner"`
	Fence      uint64    `json:"fence"`
	LeaseHash  string    `json:"leaseHash"`
	AcquiredAt time.Time `json:"acquiredAt"`
	ExpiresAt  time.Time `json:"expiresAt"`
}

// writeJSON prints v, indented, with a final newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// utc is t in UTC to the millisecond.
func utc(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

// optTime is t as an optional JSON time: nil when zero.
func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := utc(t)
	return &u
}

func toReplicaJSON(r fleet.Replica) replicaJSON {
	out := replicaJSON{ID: r.ID, Version: r.Version, Started: utc(r.Started), RefreshMs: r.Refresh.Milliseconds(),
		Expires: utc(r.Expires), Jobs: []string{}}
	for _, j := range r.Jobs {
		out.Jobs = append(out.Jobs, j.Name)
	}
	return out
}

func toJobJSON(j inspect.Job) jobJSON {
	out := jobJSON{Name: j.Name, Key: j.Key, Schedule: j.Schedule, Replicas: j.Replicas(), Conflict: j.Conflict,
		Now: utc(j.Now), LastOccurrence: optTime(j.LastOccurrence), PendingTriggers: j.PendingTriggers, Next: optTime(j.Next)}
	for _, r := range j.Registrations {
		out.Registrations = append(out.Registrations, registrationJSON{Replica: r.Replica, Schedule: r.Job.Schedule,
			Key: r.Job.Key, Fingerprint: r.Job.Fingerprint})
	}
	if h := j.Holder; h != nil {
		out.Holder = &holderJSON{Owner: h.Owner, Replica: h.Replica, Fence: uint64(h.Fence), LeaseHash: h.LeaseHash,
			AcquiredAt: utc(h.AcquiredAt), ExpiresAt: utc(h.ExpiresAt), LeftMs: h.Left.Milliseconds()}
	}
	out.LastRun = toRunJSON(j.LastRun)
	if p := j.Pause; p != nil {
		out.Paused = &pauseJSON{By: p.By, Note: p.Note, Since: utc(p.At)}
	}
	return out
}

func toRunJSON(r *inspect.Run) *runJSON {
	if r == nil {
		return nil
	}
	return &runJSON{Occurrence: utc(r.Occurrence), Owner: r.Owner, Replica: r.Replica, Fence: uint64(r.Fence),
		Started: utc(r.Started), DurationMs: r.Duration.Milliseconds(), Outcome: r.Outcome, Error: r.Error, Trigger: r.Trigger}
}

func toReleaseJSON(info lease.Info) releaseJSON {
	return releaseJSON{Owner: info.Owner, Fence: uint64(info.Fence), LeaseHash: lease.ShortID(info.IDHash),
		AcquiredAt: utc(info.AcquiredAt), ExpiresAt: utc(info.ExpiresAt)}
}
