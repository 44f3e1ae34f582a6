package scheduler

import (
	"context"
	"log/slog"
)

// lazyAttrs is a slog.Handler that adds attrs to each record it handles,
// instead of pre-formatting them as most handlers' WithAttrs do: a run's
// logger with more attributes (runHandler.WithAttrs) formats none of them
// until a line is written.
type lazyAttrs struct {
	h     slog.Handler
	attrs []slog.Attr
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

// runHandler is the handler of a run's logger: it adds the run's
// attributes (job, occurrence, lease, fence) to each record it handles,
// built then. A run is made per occurrence and usually logs nothing (its
// lines are at debug level, or at info), so its logger is part of the run
// (run.logger), and its attributes cost nothing until a line is written.
//
// A heartbeat's logger (heartbeatLog) adds job and occurrence only: the
// heartbeat names the lease it renews (lease, fence, key) itself, and a
// line must not name a field twice.
type runHandler struct {
	h         slog.Handler
	r         *run
	heartbeat bool
}

func (h *runHandler) attrs() []slog.Attr {
	r := h.r
	if h.heartbeat {
		return []slog.Attr{slog.String("job", r.job.name), slog.Time("occurrence", r.info.Occurrence)}
	}
	return []slog.Attr{slog.String("job", r.job.name), slog.Time("occurrence", r.info.Occurrence),
		slog.String("lease", r.shortID), slog.Any("fence", r.lease.Fence)}
}

func (h *runHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.h.Enabled(ctx, level)
}

func (h *runHandler) Handle(ctx context.Context, rec slog.Record) error {
	rec = rec.Clone()
	rec.AddAttrs(h.attrs()...)
	return h.h.Handle(ctx, rec)
}

func (h *runHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &lazyAttrs{h: h.h, attrs: append(h.attrs(), attrs...)}
}

// WithGroup applies the run's attributes outside the group, as With then
// WithGroup would.
func (h *runHandler) WithGroup(name string) slog.Handler {
	return h.h.WithAttrs(h.attrs()).WithGroup(name)
}
