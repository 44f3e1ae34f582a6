package scheduler

import (
	"context"
	"log/slog"
)

// lazyAttrs is a slog.Handler that adds attrs to each record it handles,
// instead of pre-formatting them as most handlers' WithAttrs do. A run's
// logger is built per occurrence and usually logs nothing (skips are at
// debug level), so its attributes should cost nothing until a line is
// actually written.
type lazyAttrs struct {
	h     slog.Handler
	attrs []slog.Attr
}

// withLazy returns l with attrs added to every line it writes.
func withLazy(l *slog.Logger, attrs ...slog.Attr) *slog.Logger {
	if h, ok := l.Handler().(*lazyAttrs); ok {
		return slog.New(&lazyAttrs{h: h.h, attrs: append(h.attrs[:len(h.attrs):len(h.attrs)], attrs...)})
	}
	return slog.New(&lazyAttrs{h: l.Handler(), attrs: attrs})
}

func (h *lazyAttrs) Enabled(ctx context.Context, level slog.Level) bool {
	return h.h.Enabled(ctx, level)
}

func (h *lazyAttrs) Handle(ctx context.Context, r slog.Record) error {
	if len(h.attrs) > 0 {
		r = r.Clone()
		r.AddAttrs(h.attrs...)
	}
	return h.h.Handle(ctx, r)
}

func (h *lazyAttrs) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &lazyAttrs{h: h.h, attrs: append(h.attrs[:len(h.attrs):len(h.attrs)], attrs...)}
}

// WithGroup applies the pending attrs outside the group, as With then
// WithGroup would.
func (h *lazyAttrs) WithGroup(name string) slog.Handler {
	return h.h.WithAttrs(h.attrs).WithGroup(name)
}
