package otelcronguard

import (
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// A measurement's attributes are the job, at most one more attribute and
// the WithAttributes ones. Building an attribute set costs allocations, so
// each distinct set is built once and kept: their number is bounded by
// jobs times the values of the second attribute (outcomes, reasons,
// causes, error classes), which is the metrics' cardinality anyway.

// attrSetKey names one cached set: the job, and the key and value of the
// second attribute (none when key is "").
type attrSetKey struct {
	job   string
	key   attribute.Key
	value string
}

// measureOpts are the options of a measurement with one attribute set,
// ready to pass without an allocation per call.
type measureOpts struct {
	set    attribute.Set
	add    []metric.AddOption
	record []metric.RecordOption
}

// attrSets caches the measurement options of each attribute set.
type attrSets struct {
	base []attribute.KeyValue // WithAttributes

	mu   sync.RWMutex
	sets map[attrSetKey]*measureOpts
}

func newAttrSets(base []attribute.KeyValue) *attrSets {
	return &attrSets{base: base, sets: make(map[attrSetKey]*measureOpts)}
}

// job returns the options for job alone.
func (a *attrSets) job(job string) *measureOpts { return a.get(attrSetKey{job: job}) }

// with returns the options for job and key=value.
func (a *attrSets) with(job string, key attribute.Key, value string) *measureOpts {
	return a.get(attrSetKey{job: job, key: key, value: value})
}

func (a *attrSets) get(k attrSetKey) *measureOpts {
	a.mu.RLock()
	o := a.sets[k]
	a.mu.RUnlock()
	if o != nil {
		return o
	}
	kvs := make([]attribute.KeyValue, 0, len(a.base)+2)
	kvs = append(kvs, a.base...)
	kvs = append(kvs, AttrJob.String(k.job))
	switch {
	case k.key == "":
	case k.key == AttrCatchUp:
		kvs = append(kvs, AttrCatchUp.Bool(k.value == "true"))
	default:
		kvs = append(kvs, k.key.String(snake(k.value)))
	}
	set := attribute.NewSet(kvs...)
	opt := metric.WithAttributeSet(set)
	o = &measureOpts{set: set, add: []metric.AddOption{opt}, record: []metric.RecordOption{opt}}
	a.mu.Lock()
	if prev := a.sets[k]; prev != nil {
		o = prev
	} else {
		a.sets[k] = o
	}
	a.mu.Unlock()
	return o
}

// snake turns a name such as "running here" or "clock skew" into an
// attribute value: running_here, clock_skew.
func snake(name string) string { return strings.ReplaceAll(name, " ", "_") }
