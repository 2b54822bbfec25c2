package projectdata_test

import (
	"crypto/sha256"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// answersTableVersion4 is the table of stored answers as control schema
// version 4 created it (shipped; version 6 replaces it).
const answersTableVersion4 = `
CREATE TABLE _pd_idempotency (
	id          INTEGER PRIMARY KEY,
	token_id    INTEGER NOT NULL, -- 0: the application's own calls
	key         TEXT NOT NULL,
	fingerprint BLOB NOT NULL,
	code        TEXT,             -- the error code; NULL for a result
	message     TEXT,
	result      BLOB,             -- JSON array of the results
	compressed  INTEGER NOT NULL, -- 1: result is DEFLATE-compressed
	created_at  TEXT NOT NULL,
	expires_at  TEXT NOT NULL,
	UNIQUE (token_id, key)
);
CREATE INDEX _pd_idempotency_expires ON _pd_idempotency (expires_at);
`

// requestFingerprint is what the Store stores for an Idempotency whose
// Fingerprint returns body.
func requestFingerprint(body string) []byte {
	sum := sha256.Sum256([]byte("request\x00" + body))
	return sum[:]
}

// TestIdempotencyAnswersSurviveTheUpgradeToVersion6 writes answers into a
// project database file at control schema version 5, as the previous
// release stored them, and opens it: the migration moves the live answers
// (results, errors, per token) to the new table, where they replay, in
// expiry order; an expired one is gone from the key.
func TestIdempotencyAnswersSurviveTheUpgradeToVersion6(t *testing.T) {
	is := is.New(t)
	clock := pdtest.NewClock(time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC))
	s, dir := pdtest.Open(t, &projectdata.Options{Now: clock.Now})
	_, _, err := s.CreateProject(ctx, "acme", "")
	is.NoErr(err)
	_, _, err = s.CreateTable(ctx, "acme", projectdata.TableDef{Name: "items", Columns: []projectdata.ColumnDef{{Name: "sku", Unique: true}}})
	is.NoErr(err)
	_, err = s.Insert(ctx, "acme", "items", []projectdata.Row{{"sku": "a"}})
	is.NoErr(err)
	is.NoErr(s.Close())

	// Back to version 5, with answers as version 4's table held them.
	raw := pdtest.Raw(t, dir, "acme")
	pdtest.Exec(t, raw, `DROP TABLE _pd_idempotency; DROP TABLE _pd_row_counts_as_of; DROP INDEX _pd_columns_order;`+answersTableVersion4+`PRAGMA user_version = 5`)
	old := []struct {
		token            int64
		key, fingerprint string
		code, message    any
		result           any
		created, expires string
	}{
		{7, "live", "other body", nil, "", `[{"table":"items","inserted_count":1,"inserted_ids":[9]}]`, "2026-11-21T13:30:00.000Z", "2026-11-22T13:30:00.000Z"},
		{0, "live", "body", nil, "", `[{"table":"items","inserted_count":1,"inserted_ids":[1]}]`, "2026-11-21T13:00:00.000Z", "2026-11-22T13:00:00.000Z"},
		{0, "error", "body", "unique_violation", "a row with the same unique value already exists", nil, "2026-11-21T13:10:00.500Z", "2026-11-22T13:10:00.500Z"},
		{0, "expired", "body", nil, "", `[{"table":"items","inserted_count":1,"inserted_ids":[5]}]`, "2026-11-20T12:00:00.000Z", "2026-11-21T12:00:00.000Z"},
	}
	st, _, err := raw.Prepare(`INSERT INTO _pd_idempotency (token_id, key, fingerprint, code, message, result, compressed, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?)`)
	is.NoErr(err)
	for _, a := range old {
		is.NoErr(st.BindInt64(1, a.token))
		is.NoErr(st.BindText(2, a.key))
		is.NoErr(st.BindBlob(3, requestFingerprint(a.fingerprint)))
		for i, v := range []any{a.code, a.message, a.result} {
			if v == nil {
				is.NoErr(st.BindNull(4 + i))
			} else {
				is.NoErr(st.BindText(4+i, v.(string)))
			}
		}
		is.NoErr(st.BindText(7, a.created))
		is.NoErr(st.BindText(8, a.expires))
		is.NoErr(st.Exec())
	}
	is.NoErr(st.Close())

	s, err = projectdata.Open(dir, &projectdata.Options{Now: clock.Now})
	is.NoErr(err)
	defer s.Close()
	keyed := func(token int64, key, body string) (projectdata.InsertResult, bool, error) {
		replayed := false
		kctx := projectdata.WithIdempotency(ctx, projectdata.Idempotency{Key: key,
			Fingerprint: func() []byte { return []byte(body) }, OnReplay: func() { replayed = true }})
		if token != 0 {
			kctx = projectdata.WithCaller(kctx, projectdata.Caller{Project: "acme", TokenID: token, Role: projectdata.RoleWrite})
		}
		res, err := s.Insert(kctx, "acme", "items", []projectdata.Row{{"sku": key + body}})
		return res, replayed, err
	}
	res, replayed, err := keyed(0, "live", "body")
	is.NoErr(err)
	is.True(replayed)
	is.Equal(res.InsertedIDs, []any{int64(1)})
	res, replayed, err = keyed(7, "live", "other body") // the token's own answer
	is.NoErr(err)
	is.True(replayed)
	is.Equal(res.InsertedIDs, []any{int64(9)})
	_, _, err = keyed(7, "live", "body")
	pdtest.Code(t, err, projectdata.ErrIdempotencyKeyReused)
	_, replayed, err = keyed(0, "error", "body")
	pdtest.Code(t, err, projectdata.ErrUniqueViolation)
	is.True(replayed)
	is.Equal(err.Error(), "a row with the same unique value already exists")
	res, replayed, err = keyed(0, "expired", "body") // expired: the key is new
	is.NoErr(err)
	is.True(!replayed)
	is.Equal(res.InsertedIDs, []any{int64(2)})
	is.Equal(countRows(t, dir, "items"), 2) // a and the expired key's row: nothing replayed ran

	// The answers moved over in expiry order, expiry in Unix milliseconds;
	// the old table and its expiry index are gone.
	var got []string
	q, _, err := raw.Prepare(`SELECT key, expires_at, typeof(message) FROM _pd_idempotency ORDER BY id`)
	is.NoErr(err)
	for q.Step() {
		exp := time.UnixMilli(q.ColumnInt64(1)).UTC().Format("2006-01-02T15:04:05.000Z")
		got = append(got, q.ColumnText(0)+"/"+q.ColumnText(2)+"@"+exp)
	}
	is.NoErr(q.Err())
	is.NoErr(q.Close())
	is.Equal(got, []string{
		"live/null@2026-11-22T13:00:00.000Z",
		"error/text@2026-11-22T13:10:00.500Z",
		"live/null@2026-11-22T13:30:00.000Z",
		"expired/null@2026-11-22T14:00:00.000Z", // replaced when the key was used again: the newest id
	})
	var objects []string
	q, _, err = raw.Prepare(`SELECT name FROM sqlite_schema WHERE tbl_name LIKE '\_pd\_idempotency%' ESCAPE '\' ORDER BY name`)
	is.NoErr(err)
	for q.Step() {
		objects = append(objects, q.ColumnText(0))
	}
	is.NoErr(q.Close())
	is.Equal(objects, []string{"_pd_idempotency", "sqlite_autoindex__pd_idempotency_1"})
	q, _, err = raw.Prepare(`PRAGMA user_version`)
	is.NoErr(err)
	is.True(q.Step())
	is.Equal(q.ColumnInt(0), newestControlVersion(t))
	is.NoErr(q.Close())
}
