package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// ReadFile returns the events of one history file in file order. A last
// line without its newline (a writer killed mid-write) is dropped; any
// other malformed line is an error naming its line number.
func ReadFile(path string) ([]Event, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("history: read %s: %w", path, err)
	}
	if i := bytes.LastIndexByte(data, '\n'); i != len(data)-1 {
		data = data[:i+1] // torn last line
	}
	var out []Event
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("history: %s:%d: %w", path, n, err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("history: read %s: %w", path, err)
	}
	return out, nil
}

// ReadDir reads every *.jsonl file in dir and returns all their events
// merged, ordered by Mono (ties keep file order).
func ReadDir(dir string) ([]Event, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("history: list %s: %w", dir, err)
	}
	sort.Strings(paths)
	var all []Event
	for _, p := range paths {
		evs, err := ReadFile(p)
		if err != nil {
			return nil, err
		}
		all = append(all, evs...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Mono < all[j].Mono })
	return all, nil
}
