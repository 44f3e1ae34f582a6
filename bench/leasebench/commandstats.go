package leasebench

import (
	"bufio"
	"context"
	"strconv"
	"strings"

	"github.com/redis/rueidis"
)

// CommandStat is one command's line of INFO commandstats.
type CommandStat struct {
	Calls int64   // times called, including calls made from scripts
	Usec  float64 // total server CPU time in microseconds
}

// harnessCommands are the commands the harness itself sends to read and
// reset statistics; they are left out of every count.
var harnessCommands = map[string]bool{"info": true, "config|resetstat": true, "config": true, "ping": true, "hello": true, "client|setinfo": true, "client": true, "flushall": true}

// ParseCommandStats parses the text of INFO commandstats into a map keyed by
// lower-case command name (subcommands as "config|resetstat").
func ParseCommandStats(info string) map[string]CommandStat {
	out := map[string]CommandStat{}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		name, rest, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		var st CommandStat
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "calls":
				st.Calls, _ = strconv.ParseInt(v, 10, 64)
			case "usec":
				st.Usec, _ = strconv.ParseFloat(v, 64)
			}
		}
		out[strings.TrimPrefix(name, "cmdstat_")] = st
	}
	return out
}

// ParseInfoInt returns the integer field name from INFO text, or 0.
func ParseInfoInt(info, name string) int64 {
	return int64(ParseInfoFloat(info, name))
}

// ParseInfoFloat returns the number field name of an INFO reply, 0 if
// absent or not a number.
func ParseInfoFloat(info, name string) float64 {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			n, _ := strconv.ParseFloat(v, 64)
			return n
		}
	}
	return 0
}

// Admin is the harness's own connection for statistics.
type Admin struct{ c rueidis.Client }

// NewAdmin connects to addr.
func NewAdmin(addr string) (*Admin, error) {
	c, err := newRueidis(addr)
	if err != nil {
		return nil, err
	}
	return &Admin{c: c}, nil
}

// Close closes the connection.
func (a *Admin) Close() { a.c.Close() }

// ResetStats runs CONFIG RESETSTAT.
func (a *Admin) ResetStats(ctx context.Context) error {
	return a.c.Do(ctx, a.c.B().ConfigResetstat().Build()).Error()
}

// FlushAll runs FLUSHALL: the next run starts on an empty server.
func (a *Admin) FlushAll(ctx context.Context) error {
	return a.c.Do(ctx, a.c.B().Flushall().Build()).Error()
}

// Info returns INFO section.
func (a *Admin) Info(ctx context.Context, section string) (string, error) {
	return a.c.Do(ctx, a.c.B().Info().Section(section).Build()).ToString()
}

// CommandStats returns the commandstats since the last reset, without the
// harness's own commands.
func (a *Admin) CommandStats(ctx context.Context) (map[string]CommandStat, error) {
	s, err := a.Info(ctx, "commandstats")
	if err != nil {
		return nil, err
	}
	m := ParseCommandStats(s)
	for k := range m {
		if harnessCommands[k] {
			delete(m, k)
		}
	}
	return m, nil
}

// TotalCalls sums Calls over stats.
func TotalCalls(stats map[string]CommandStat) int64 {
	var n int64
	for _, s := range stats {
		n += s.Calls
	}
	return n
}

// ScriptCalls sums the EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and FCALL calls in
// stats. Redis counts the commands a script runs as calls of their own, so
// TotalCalls - ScriptCalls is the work done and ScriptCalls the scripts run.
func ScriptCalls(stats map[string]CommandStat) int64 {
	var n int64
	for _, k := range []string{"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"} {
		n += stats[k].Calls
	}
	return n
}
