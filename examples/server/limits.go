package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/httpapi"
)

// serviceLimits are the bounds of the library that serve -limit sets: the
// Store's and the HTTP API's options. A zero field is the library's
// default.
type serviceLimits struct {
	store projectdata.Options
	api   httpapi.Options
}

// serviceLimit is one name -limit takes: what it sets, and its default.
type serviceLimit struct {
	name, doc string
	set       func(l *serviceLimits, v string) error
}

// serviceLimitNames are the names -limit takes, in the order serve -h lists
// them; each sets the Options field its doc names.
var serviceLimitNames = []serviceLimit{
	{"max-open-projects", "project databases open at once (MaxOpenProjects; default 64)", intLimit(func(l *serviceLimits) *int { return &l.store.MaxOpenProjects })},
	{"max-readers", "read connections per project (MaxReadersPerProject; default 4)", intLimit(func(l *serviceLimits) *int { return &l.store.MaxReadersPerProject })},
	{"max-exports", "exports running at once per project (MaxExportsPerProject; default 2)", intLimit(func(l *serviceLimits) *int { return &l.store.MaxExportsPerProject })},
	{"max-export-bytes", "bytes of a project's export files (MaxExportBytes; default 4 GiB)", int64Limit(func(l *serviceLimits) *int64 { return &l.store.MaxExportBytes })},
	{"export-ttl", "how long an export file is kept (ExportTTL; default 168h)", durationLimit(func(l *serviceLimits) *time.Duration { return &l.store.ExportTTL })},
	{"query-timeout", "execution budget of a query or a list (QueryTimeout; default 1s)", durationLimit(func(l *serviceLimits) *time.Duration { return &l.store.QueryTimeout })},
	{"write-timeout", "budget of a bulk update or delete (WriteTimeout; default 30s)", durationLimit(func(l *serviceLimits) *time.Duration { return &l.store.WriteTimeout })},
	{"queue-timeout", "wait for a project's connection before 503 (QueueTimeout; default 2s)", durationLimit(func(l *serviceLimits) *time.Duration { return &l.store.QueueTimeout })},
	{"busy-timeout", "SQLite's wait for a lock (BusyTimeout; default 5s)", durationLimit(func(l *serviceLimits) *time.Duration { return &l.store.BusyTimeout })},
	{"query-max-bytes", "bytes of one query's rows (QueryMaxBytes; default 4 MiB)", intLimit(func(l *serviceLimits) *int { return &l.store.QueryMaxBytes })},
	{"query-max-memory", "SQLite memory of one query (QueryMaxMemory; default 64 MiB)", int64Limit(func(l *serviceLimits) *int64 { return &l.store.QueryMaxMemory })},
	{"query-max-sql-bytes", "bytes of one query's SQL (QueryMaxSQLBytes; default 100,000)", intLimit(func(l *serviceLimits) *int { return &l.store.QueryMaxSQLBytes })},
	{"query-max-call-args", "function arguments of one query's statement (QueryMaxCallArgs; default 256)", intLimit(func(l *serviceLimits) *int { return &l.store.QueryMaxCallArgs })},
	{"max-sqlite-memory", "SQLite memory of the whole server (MaxSQLiteMemory; default 512 MiB)", int64Limit(func(l *serviceLimits) *int64 { return &l.store.MaxSQLiteMemory })},
	{"max-insert-rows", "rows of one insert (MaxInsertRows; default 10,000)", intLimit(func(l *serviceLimits) *int { return &l.store.MaxInsertRows })},
	{"max-write-group", "concurrent writes sharing a commit (MaxWriteGroup; default 128)", intLimit(func(l *serviceLimits) *int { return &l.store.MaxWriteGroup })},
	{"idempotency-ttl", "how long an Idempotency-Key's answer is kept (IdempotencyTTL; default 24h)", durationLimit(func(l *serviceLimits) *time.Duration { return &l.store.IdempotencyTTL })},
	{"change-retention", "how long the change log is kept (ChangeRetention; default 168h)", durationLimit(func(l *serviceLimits) *time.Duration { return &l.store.ChangeRetention })},
	{"max-streams-per-token", "change streams one token follows at once (MaxChangeStreamsPerToken; default 16)", intLimit(func(l *serviceLimits) *int { return &l.store.MaxChangeStreamsPerToken })},
	{"max-body-bytes", "bytes of a request body (MaxBodyBytes; default 8 MiB)", int64Limit(func(l *serviceLimits) *int64 { return &l.api.MaxBodyBytes })},
	{"max-body-bytes-in-flight", "bytes of the request bodies read at once (MaxBodyBytesInFlight; default 16 × max-body-bytes)", int64Limit(func(l *serviceLimits) *int64 { return &l.api.MaxBodyBytesInFlight })},
	{"max-body-bytes-per-token", "part of max-body-bytes-in-flight one token holds (MaxBodyBytesPerToken; default a quarter)", int64Limit(func(l *serviceLimits) *int64 { return &l.api.MaxBodyBytesPerToken })},
	{"max-body-bytes-per-project", "part of max-body-bytes-in-flight one project holds (MaxBodyBytesPerProject; default a half)", int64Limit(func(l *serviceLimits) *int64 { return &l.api.MaxBodyBytesPerProject })},
	{"body-wait", "wait for room under max-body-bytes-in-flight before 503 (BodyWait; default 2s)", durationLimit(func(l *serviceLimits) *time.Duration { return &l.api.BodyWait })},
	{"max-downloads-per-token", "export downloads one token runs at once (MaxDownloadsPerToken; default 16)", intLimit(func(l *serviceLimits) *int { return &l.api.MaxDownloadsPerToken })},
	{"stream-write-timeout", "each write of a change stream or download (StreamWriteTimeout; default 30s)", durationLimit(func(l *serviceLimits) *time.Duration { return &l.api.StreamWriteTimeout })},
}

// Set sets one limit, given as NAME=VALUE: a count, a size in bytes, or a
// duration (such as 2s), positive; 0 is the default.
func (l *serviceLimits) Set(s string) error {
	name, value, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("want NAME=VALUE, such as query-timeout=2s")
	}
	i := slices.IndexFunc(serviceLimitNames, func(sl serviceLimit) bool { return sl.name == name })
	if i < 0 {
		return fmt.Errorf("no limit %q (see server serve -h)", name)
	}
	if err := serviceLimitNames[i].set(l, value); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func (l *serviceLimits) String() string { return "" }

func intLimit(field func(*serviceLimits) *int) func(*serviceLimits, string) error {
	return numberLimit(field, strconv.Atoi, "a whole number,")
}

func int64Limit(field func(*serviceLimits) *int64) func(*serviceLimits, string) error {
	return numberLimit(field, func(v string) (int64, error) { return strconv.ParseInt(v, 10, 64) }, "a number of bytes,")
}

func durationLimit(field func(*serviceLimits) *time.Duration) func(*serviceLimits, string) error {
	return numberLimit(field, time.ParseDuration, "a duration, such as 2s,")
}

// numberLimit sets the option field returns to the value parse reads,
// which must be 0 or more; want says what it takes.
func numberLimit[T int | int64 | time.Duration](field func(*serviceLimits) *T, parse func(string) (T, error), want string) func(*serviceLimits, string) error {
	return func(l *serviceLimits, v string) error {
		n, err := parse(v)
		if err != nil || n < 0 {
			return fmt.Errorf("want %s 0 or more, not %q", want, v)
		}
		*field(l) = n
		return nil
	}
}

// printServiceLimits lists the names -limit takes.
func printServiceLimits(w io.Writer) {
	fmt.Fprintln(w, "\n-limit NAME=VALUE sets one of the service's bounds (0: its default); it may be given for each of:")
	for _, sl := range serviceLimitNames {
		fmt.Fprintf(w, "  %-22s %s\n", sl.name, sl.doc)
	}
}
