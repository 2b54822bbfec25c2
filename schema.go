package projectdata

import (
	"strconv"
	"time"

	"github.com/ncruces/go-sqlite3"
	"github.com/pkg/errors"
)

// migrations are the control schema's versions: migrations[i] brings a
// database from version i to i+1 (PRAGMA user_version). A release only ever
// appends to this list, so every older project database can be migrated.
var migrations = []string{
	// Version 1.
	`
CREATE TABLE _pd_project (
	id         INTEGER PRIMARY KEY CHECK (id = 1),
	slug       TEXT NOT NULL,
	name       TEXT NOT NULL,
	created_at TEXT NOT NULL,
	updated_at TEXT NOT NULL
);
CREATE TABLE _pd_tokens (
	id            INTEGER PRIMARY KEY AUTOINCREMENT,
	name          TEXT NOT NULL,
	role          TEXT NOT NULL,
	secret_sha256 BLOB NOT NULL UNIQUE,
	expires_at    TEXT,
	revoked_at    TEXT,
	last_used_at  TEXT,
	created_at    TEXT NOT NULL
);
CREATE TABLE _pd_tables (
	id           INTEGER PRIMARY KEY AUTOINCREMENT,
	name         TEXT NOT NULL UNIQUE COLLATE NOCASE,
	display_name TEXT,
	created_at   TEXT NOT NULL,
	updated_at   TEXT NOT NULL
);
CREATE TABLE _pd_columns (
	id            INTEGER PRIMARY KEY AUTOINCREMENT,
	table_id      INTEGER NOT NULL REFERENCES _pd_tables(id) ON DELETE CASCADE,
	position      INTEGER NOT NULL,
	name          TEXT NOT NULL COLLATE NOCASE,
	type          TEXT NOT NULL,
	is_nullable   INTEGER NOT NULL,
	default_value TEXT, -- the default as a JSON scalar; NULL when there is none
	is_primary    INTEGER NOT NULL,
	is_unique     INTEGER NOT NULL,
	created_at    TEXT NOT NULL,
	updated_at    TEXT NOT NULL,
	UNIQUE (table_id, name)
);
-- Indexes created through the API (managed). Their definition lives in
-- sqlite_schema; this table says which indexes are ours.
CREATE TABLE _pd_indexes (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	table_id   INTEGER NOT NULL REFERENCES _pd_tables(id) ON DELETE CASCADE,
	name       TEXT NOT NULL UNIQUE COLLATE NOCASE,
	created_at TEXT NOT NULL
);
CREATE TABLE _pd_exports (
	id            TEXT PRIMARY KEY,
	kind          TEXT NOT NULL,
	scope         TEXT NOT NULL,
	table_name    TEXT NOT NULL,
	format        TEXT NOT NULL,
	file_name     TEXT NOT NULL,
	download_name TEXT NOT NULL,
	content_type  TEXT NOT NULL,
	row_count     INTEGER NOT NULL,
	table_count   INTEGER,
	size_bytes    INTEGER NOT NULL,
	sha256        TEXT NOT NULL,
	status        TEXT NOT NULL,
	status_reason TEXT,
	missing_at    TEXT,
	created_at    TEXT NOT NULL,
	expires_at    TEXT NOT NULL
);
CREATE INDEX _pd_exports_status ON _pd_exports (status, created_at);
`,
	// Version 2: the registry version, raised by every change of the
	// registry or of the application schema (see writeSchema), so that
	// every connection knows when its cached registry is stale.
	`
CREATE TABLE _pd_registry (
	id      INTEGER PRIMARY KEY CHECK (id = 1),
	version INTEGER NOT NULL
);
INSERT INTO _pd_registry (id, version) VALUES (1, 1);
`,
	// Version 3: row counts of the application tables (filled for existing
	// tables by ensureRowCounts) and the project's secrets.
	`
CREATE TABLE _pd_row_counts (
	table_id  INTEGER PRIMARY KEY REFERENCES _pd_tables(id) ON DELETE CASCADE,
	row_count INTEGER NOT NULL
);
CREATE TABLE _pd_secrets (
	name  TEXT PRIMARY KEY,
	value BLOB NOT NULL
);
`,
	// Version 4: stored answers of idempotent writes.
	idempotencySchema,
	// Version 5: the change log (changelog.go). One record holds count
	// changes of one op on one table, ids last_id-count+1 .. last_id.
	`
CREATE TABLE _pd_changes (
	last_id    INTEGER PRIMARY KEY,
	count      INTEGER NOT NULL,
	table_name TEXT NOT NULL,
	op         TEXT NOT NULL,
	at         TEXT NOT NULL,
	data       TEXT -- JSON: row images (insert, update), keys (delete); NULL for schema
);
`,
	// Version 6: stored answers pruned in id order, without an index of
	// expiry.
	idempotencyRowidSchema,
	// Version 7: the change id of the stored row counts (rowcount.go).
	rowCountsAsOfSchema,
	// Version 8: DATETIME values in the service's one form (upgrade.go).
	canonicalDatetimesSchema,
	// Version 9: the registry's columns in their order, which loading the
	// registry (registry.go) read through the (table_id, name) index with a
	// seek and a sort: a third of the SQL work of a whole load. Building it
	// reads _pd_columns once (30,000 rows: milliseconds).
	`
CREATE INDEX _pd_columns_order ON _pd_columns (table_id, position);
`,
}

// migrate brings the control schema of the database on c to the newest
// version, one transaction per version.
func migrate(c *conn) error {
	if err := migrateTo(c, len(migrations)); err != nil {
		return err
	}
	return ensureRowCounts(c)
}

// migrateTo brings the control schema of the database on c to version
// target, one transaction per version: an upgrade stopped between two of
// them resumes from the version it reached.
func migrateTo(c *conn, target int) error {
	version, err := controlVersion(c)
	if err != nil {
		return err
	}
	if version > len(migrations) {
		return errors.Errorf("control schema version %d is newer than this release knows (%d)", version, len(migrations))
	}
	for v := version; v < target; v++ {
		err := func() (err error) {
			tx, err := c.db.BeginImmediate()
			if err != nil {
				return err
			}
			defer tx.End(&err)
			// Another Store on the same folder may have migrated meanwhile.
			if now, err := controlVersion(c); err != nil || now > v {
				return err
			}
			if err := c.db.Exec(migrations[v]); err != nil {
				return err
			}
			if code := migrationCode[v+1]; code != nil {
				if err := code(c); err != nil {
					return err
				}
			}
			// user_version cannot be bound; v+1 is our own integer.
			return c.db.Exec(`PRAGMA user_version = ` + strconv.Itoa(v+1))
		}()
		if err != nil {
			return errors.Wrapf(err, "control schema version %d", v+1)
		}
	}
	return nil
}

// controlVersion reads the control schema's version.
func controlVersion(c *conn) (version int, err error) {
	_, err = c.queryRow(`PRAGMA user_version`, nil, func(st *sqlite3.Stmt) error {
		version = st.ColumnInt(0)
		return nil
	})
	return version, err
}

// isSlug reports whether s is a project slug: 1-63 characters of a-z, 0-9
// and '-', starting with a letter or digit. (Every request checks one: this
// is a loop, not a regexp.)
func isSlug(s string) bool {
	if len(s) == 0 || len(s) > 63 || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// validateSlug checks a project slug before it reaches the file system.
func validateSlug(slug string) error {
	if !isSlug(slug) {
		return errorf(ErrInvalidProjectSlug, "project slug %.80q must be 1-63 characters of a-z, 0-9 and '-', starting with a letter or digit", slug)
	}
	return nil
}

// timeLayout is the one timestamp form of the service: RFC 3339 UTC with
// millisecond precision and a Z.
const timeLayout = "2006-01-02T15:04:05.000Z"

func formatTime(t time.Time) string { return string(appendTime(make([]byte, 0, len(timeLayout)), t)) }

// appendTime appends t in timeLayout, as t.UTC().AppendFormat(dst,
// timeLayout) does, without interpreting the layout for the years 0-9999.
func appendTime(dst []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(dst, timeLayout)
	}
	hour, minute, sec := t.Clock()
	milli := t.Nanosecond() / 1e6
	return append(dst,
		byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+int(month)/10), byte('0'+int(month)%10), '-',
		byte('0'+day/10), byte('0'+day%10), 'T',
		byte('0'+hour/10), byte('0'+hour%10), ':',
		byte('0'+minute/10), byte('0'+minute%10), ':',
		byte('0'+sec/10), byte('0'+sec%10), '.',
		byte('0'+milli/100), byte('0'+milli/10%10), byte('0'+milli%10), 'Z')
}

func parseTime(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }

// Timestamp is an instant in UTC with millisecond precision. It encodes to
// JSON as "2026-11-21T14:05:09.123Z" and decodes any RFC 3339 form.
type Timestamp struct{ time.Time }

// MarshalJSON encodes the timestamp in the service's one form.
func (t Timestamp) MarshalJSON() ([]byte, error) {
	return t.AppendJSON(make([]byte, 0, len(timeLayout)+2)), nil
}

// AppendJSON appends the timestamp's JSON encoding (see MarshalJSON) to dst.
func (t Timestamp) AppendJSON(dst []byte) []byte {
	return append(appendTime(append(dst, '"'), t.Time), '"')
}

// UnmarshalJSON decodes an RFC 3339 timestamp.
func (t *Timestamp) UnmarshalJSON(b []byte) error {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return errors.New("timestamp must be an RFC 3339 string")
	}
	v, err := parseTime(string(b[1 : len(b)-1]))
	if err != nil {
		return errors.New("timestamp must be an RFC 3339 string")
	}
	t.Time = v.UTC()
	return nil
}

// String returns the timestamp in the service's one form.
func (t Timestamp) String() string { return formatTime(t.Time) }
