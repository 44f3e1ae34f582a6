package completion

import (
	"bytes"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cronguard/cronguard/scheduler"
)

// note is one thing that happened to a replica: a scheduler event (Kind is
// its EventKind's name), or a mark of the job's own ("committed"), or the
// child's last word ("exit", with its Stats). At is the machine's wall
// clock when it happened; both processes read the same one.
type note struct {
	Kind       string           `json:"kind"`
	Replica    string           `json:"replica"`
	Attempt    int              `json:"attempt,omitempty"`
	Fence      int64            `json:"fence,omitempty"`
	Occurrence time.Time        `json:"occurrence,omitzero"`
	At         time.Time        `json:"at"`
	Err        string           `json:"err,omitempty"`
	Stats      *scheduler.Stats `json:"stats,omitempty"`
}

// Marks the job and the child replica write beside the scheduler's events.
const (
	kindCommitted = "committed" // the job committed its effect
	kindExit      = "exit"      // the child shut down; Stats is its scheduler's
)

// noteOf is the note of scheduler event e, at the wall clock's now.
func noteOf(e scheduler.Event) note {
	n := note{Kind: e.Kind.String(), Replica: e.Instance, Attempt: e.Attempt, Fence: int64(e.Fence), Occurrence: e.Occurrence, At: time.Now()}
	if e.Err != nil {
		n.Err = e.Err.Error()
	}
	return n
}

// journal keeps the notes of every replica of a test, in the order they
// arrived, and wakes whoever waits for one.
type journal struct {
	mu      sync.Mutex
	notes   []note
	changed chan struct{} // closed and replaced at each note
}

func newJournal() *journal { return &journal{changed: make(chan struct{})} }

// add records n.
func (j *journal) add(n note) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.notes = append(j.notes, n)
	close(j.changed)
	j.changed = make(chan struct{})
}

// observe is a scheduler observer (scheduler.WithObserver) that records
// each event.
func (j *journal) observe(e scheduler.Event) { j.add(noteOf(e)) }

// all returns the notes that match.
func (j *journal) all(match func(note) bool) []note {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []note
	for _, n := range j.notes {
		if match(n) {
			out = append(out, n)
		}
	}
	return out
}

// waitFor returns the first note that matches, waiting for it up to bound;
// it fails the test, with what it saw, if none comes.
func (j *journal) waitFor(t *testing.T, what string, bound time.Duration, match func(note) bool) note {
	t.Helper()
	timeout := time.NewTimer(bound)
	defer timeout.Stop()
	for {
		j.mu.Lock()
		i := slices.IndexFunc(j.notes, match)
		var n note
		if i >= 0 {
			n = j.notes[i]
		}
		changed := j.changed
		j.mu.Unlock()
		if i >= 0 {
			return n
		}
		select {
		case <-changed:
		case <-timeout.C:
			t.Fatalf("%s: not seen within %s; seen:\n%s", what, bound, j)
			return note{}
		}
	}
}

// String lists the notes, one a line.
func (j *journal) String() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	var b bytes.Buffer
	for _, n := range j.notes {
		b.WriteString(n.At.Format("15:04:05.000"))
		b.WriteString(" " + n.Replica + " " + n.Kind)
		if n.Attempt > 0 {
			b.WriteString(" attempt=" + strconv.Itoa(n.Attempt))
		}
		if !n.Occurrence.IsZero() {
			b.WriteString(" occurrence=" + n.Occurrence.UTC().Format(time.RFC3339Nano))
		}
		if n.Err != "" {
			b.WriteString(" err=" + n.Err)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func (m matcher) and(o func(note) bool) matcher {
	return func(n note) bool { return m(n) && o(n) }
}

// matcher is a note predicate that can be narrowed.
type matcher func(note) bool

// event matches scheduler event kind on replica (any replica when "").
func event(kind scheduler.EventKind, replica string) matcher {
	return func(n note) bool { return n.Kind == kind.String() && (replica == "" || n.Replica == replica) }
}

// attempt narrows m to attempt k of occurrence occ.
func (m matcher) attempt(occ time.Time, k int) matcher {
	return m.and(func(n note) bool { return n.Attempt == k && n.Occurrence.Equal(occ) })
}

// of narrows m to occurrence occ.
func (m matcher) of(occ time.Time) matcher {
	return m.and(func(n note) bool { return n.Occurrence.Equal(occ) })
}
