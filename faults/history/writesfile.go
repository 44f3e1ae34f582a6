package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

// WritesFile is the name of the copy of WritesTable that TestFaults keeps
// beside the histories, so that a finished run can be checked again
// without its database. It does not end in .jsonl: ReadDir takes every
// .jsonl file for a history.
const WritesFile = "writes.json"

// SaveWrites writes ws to path as a JSON array, one write per line.
func SaveWrites(path string, ws []Write) error {
	var b bytes.Buffer
	b.WriteString("[")
	for i, w := range ws {
		line, err := json.Marshal(w)
		if err != nil {
			return fmt.Errorf("history: save writes: %w", err)
		}
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n")
		b.Write(line)
	}
	b.WriteString("\n]\n")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("history: save writes: %w", err)
	}
	return nil
}

// LoadWrites reads a file SaveWrites wrote. The writes come back in the
// file's order, which is WritesTable's id order.
func LoadWrites(path string) ([]Write, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("history: load writes: %w", err)
	}
	var ws []Write
	if err := json.Unmarshal(data, &ws); err != nil {
		return nil, fmt.Errorf("history: load writes %s: %w", path, err)
	}
	return ws, nil
}
