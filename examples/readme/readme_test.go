package readme

import (
	"context"
	"crypto/tls"
	"database/sql"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/sdk/metric"
	"go.uber.org/goleak"

	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/redislease"
	"github.com/cronguard/cronguard/otelcronguard"
	"github.com/cronguard/cronguard/scheduler"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// must and check stand for the reader's error handling in the quick start.
func must[T any](v T, err error) T {
	check(err)
	return v
}

func check(err error) {
	if err != nil {
		panic(err)
	}
}

// quickStart is the README's "Quick start" block. It is compiled, not run:
// it needs Redis and PostgreSQL and waits for a signal.
func quickStart(db *sql.DB) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	client := must(rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"localhost:6379"}, DisableCache: true}))
	store := must(redislease.New(client)) // keys under "cronguard:"
	s := must(scheduler.New(store))
	check(s.Register("invoices", scheduler.Cron("0 2 * * *"), func(ctx context.Context) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		// ErrStale for a stale holder, ErrDuplicate for a second run of the occurrence: nothing lands.
		if err := fencing.AdvanceOnceFromContext(ctx, tx, "invoices"); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO invoices (day) VALUES (current_date)"); err != nil {
			return err
		}
		return tx.Commit()
	}, scheduler.WithTTL(time.Minute), scheduler.WithCatchUp(time.Hour)))
	check(s.Start())
	<-ctx.Done()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	check(s.Shutdown(shutdownCtx)) // cancels running jobs, waits for them, releases their leases
}

// tlsClient is the README's TLS and AUTH block.
func tlsClient() (rueidis.Client, error) {
	client, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:  []string{"redis.internal:6380"},
		Username:     "cronguard",
		Password:     os.Getenv("REDIS_PASSWORD"),
		TLSConfig:    &tls.Config{MinVersion: tls.VersionTLS12},
		DisableCache: true,
	})
	return client, err
}

// metricsWiring is the README's "Metrics and traces" block. It is compiled,
// not run: it registers on the default Prometheus registry.
func metricsWiring(store lease.Store) {
	exporter := must(prometheus.New()) // go.opentelemetry.io/otel/exporters/prometheus, on the default registry
	otel.SetMeterProvider(metric.NewMeterProvider(metric.WithReader(exporter)))
	tel := must(otelcronguard.New()) // the global meter and tracer providers; or WithMeterProvider, WithTracerProvider
	s := must(scheduler.New(store, tel.Options()...))
	http.Handle("/metrics", promhttp.Handler())
	_ = s
}

var _, _, _ = quickStart, tlsClient, metricsWiring

// goBlock matches a fenced Go block, possibly indented (inside a list item).
var goBlock = regexp.MustCompile("(?ms)^[ \t]*```go\n(.*?)^[ \t]*```")

// normalize drops indentation and blank lines, so that a block matches its
// copy inside a function body.
func normalize(s string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if l := strings.TrimSpace(line); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestReadme_GoBlocks_InSync(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	self, err := os.ReadFile("readme_test.go")
	require.NoError(t, err)
	blocks := goBlock.FindAllStringSubmatch(string(readme), -1)
	require.Len(t, blocks, 3, "README.md's Go blocks: the quick start, the TLS client and the metrics wiring; add new ones here")
	for _, b := range blocks {
		assert.Contains(t, normalize(string(self)), normalize(b[1]),
			"a README Go block is not (verbatim) in examples/readme/readme_test.go")
	}
}

func TestReadme_QuickStart_AtMost25Lines(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	blocks := goBlock.FindAllStringSubmatch(string(readme), -1)
	require.NotEmpty(t, blocks)
	assert.LessOrEqual(t, strings.Count(blocks[0][1], "\n"), 25)
}
