package logattr

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestDuration_SameTextInJSONAndText: one duration reads the same in both
// of slog's handlers, and parses back.
func TestDuration_SameTextInJSONAndText(t *testing.T) {
	for _, d := range []time.Duration{0, 1500 * time.Millisecond, 96789857, -2 * time.Second, 26 * time.Hour} {
		var js, text bytes.Buffer
		slog.New(slog.NewJSONHandler(&js, nil)).Info("m", Duration("took", d))
		slog.New(slog.NewTextHandler(&text, nil)).Info("m", Duration("took", d))
		var rec map[string]any
		require.NoError(t, json.Unmarshal(js.Bytes(), &rec))
		assert.Equal(t, d.String(), rec["took"])
		assert.Contains(t, text.String(), " took="+d.String()+"\n")
		back, err := time.ParseDuration(rec["took"].(string))
		require.NoError(t, err)
		assert.Equal(t, d, back)
	}
}

// TestDuration_NoSlogDurationInTheRepository: no package logs a duration
// with slog.Duration, whose JSON form is a count of nanoseconds; each uses
// Duration, so a field looks the same in every package.
func TestDuration_NoSlogDurationInTheRepository(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		assert.NotContains(t, string(src), "slog.Duration(", "%s: use logattr.Duration", path)
		return nil
	})
	require.NoError(t, err)
}
