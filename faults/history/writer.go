package history

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
)

// Writer appends events to a history file. It is safe for concurrent use.
type Writer struct {
	replica string
	pid     int

	mu sync.Mutex
	f  *os.File
}

// Create opens path for appending (creating it if needed) and returns a
// Writer that stamps every event with replica and this process's PID.
func Create(path, replica string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("history: open %s: %w", path, err)
	}
	return &Writer{replica: replica, pid: os.Getpid(), f: f}, nil
}

// Write stamps e with the replica, the PID and, when they are zero, both
// clocks, then appends it as one line with a single write(2).
func (w *Writer) Write(e Event) error {
	if e.Mono == 0 {
		e.Mono = Mono()
	}
	if e.Wall == 0 {
		e.Wall = Wall()
	}
	e.Replica, e.PID = w.replica, w.pid
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("history: encode %s: %w", e.Kind, err)
	}
	line = append(line, '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return fmt.Errorf("history: write %s: writer closed", e.Kind)
	}
	if _, err := w.f.Write(line); err != nil {
		return fmt.Errorf("history: write %s: %w", e.Kind, err)
	}
	return nil
}

// Close syncs and closes the file. Later writes fail.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Sync()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.f = nil
	return err
}
