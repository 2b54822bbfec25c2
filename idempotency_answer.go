package projectdata

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"io"
	"reflect"
	"strconv"

	"github.com/pkg/errors"
)

// idempotencySchema is the first control table of stored answers
// (migration 4), as shipped; idempotencyRowidSchema replaces it.
const idempotencySchema = `
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

// idempotencyRowidSchema is the control table of stored answers
// (migration 6). An answer's size is bounded by what its operation wrote:
// the largest is an insert's inserted_ids, the keys of rows the same
// transaction stored; answers over compressAbove bytes are stored
// DEFLATE-compressed.
//
// A keyed write touches two B-trees of it: the table, where a new row goes
// last (ids grow with time), and the (token_id, key) index. Pruning reads
// the table in id order (see pruneOldest), so that no index of expiry is
// written with every answer, and expiry is Unix milliseconds. The answers
// of the first table move over, oldest expiry first.
const idempotencyRowidSchema = `
ALTER TABLE _pd_idempotency RENAME TO _pd_idempotency_4;
CREATE TABLE _pd_idempotency (
	id          INTEGER PRIMARY KEY, -- grows with time: pruned in id order
	token_id    INTEGER NOT NULL,    -- 0: the application's own calls
	key         TEXT NOT NULL,
	fingerprint BLOB NOT NULL,
	code        TEXT,                -- the error code; NULL for a result
	message     TEXT,                -- the error message; NULL for a result
	result      BLOB,                -- JSON array of the results
	compressed  INTEGER NOT NULL,    -- 1: result is DEFLATE-compressed
	expires_at  INTEGER NOT NULL,    -- Unix milliseconds
	UNIQUE (token_id, key)
);
INSERT INTO _pd_idempotency (token_id, key, fingerprint, code, message, result, compressed, expires_at)
	SELECT token_id, key, fingerprint, code, nullif(message, ''), result, compressed,
		CAST(round(unixepoch(expires_at, 'subsec') * 1000) AS INTEGER)
	FROM _pd_idempotency_4 ORDER BY expires_at, id;
DROP TABLE _pd_idempotency_4;
`

// compressAbove is the size from which a stored answer is compressed.
const compressAbove = 1024

// compressAnswer returns the bytes to store for an encoded answer and
// whether they are compressed.
func compressAnswer(body []byte) ([]byte, bool) {
	if len(body) <= compressAbove {
		return body, false
	}
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.BestSpeed) // only a bad level fails
	w.Write(body)
	w.Close()
	if buf.Len() >= len(body) {
		return body, false
	}
	return buf.Bytes(), true
}

// decodeAnswer fills results (pointers) from a stored JSON array. Numbers
// in `any` positions come back as int64 when integral, else float64, as
// the Store returns them; everything re-encodes to the same JSON bytes.
func decodeAnswer(stored []byte, compressed bool, results []any) error {
	if compressed {
		b, err := io.ReadAll(flate.NewReader(bytes.NewReader(stored)))
		if err != nil {
			return errors.Wrap(err, "decompress idempotent answer")
		}
		stored = b
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(stored, &parts); err != nil {
		return errors.Wrap(err, "decode idempotent answer")
	}
	if len(parts) != len(results) {
		return errors.Errorf("decode idempotent answer: %d results stored, %d expected", len(parts), len(results))
	}
	for i, part := range parts {
		// The operation may have run before its answer was found: what
		// it set is not the answer.
		reflect.ValueOf(results[i]).Elem().SetZero()
		d := json.NewDecoder(bytes.NewReader(part))
		d.UseNumber()
		if err := d.Decode(results[i]); err != nil {
			return errors.Wrap(err, "decode idempotent answer")
		}
		exactNumbers(reflect.ValueOf(results[i]))
	}
	return nil
}

// exactNumbers replaces every json.Number held in an interface inside v by
// an int64 (integral) or a float64.
func exactNumbers(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			exactNumbers(v.Elem())
		}
	case reflect.Interface:
		if v.IsNil() {
			return
		}
		if n, ok := v.Interface().(json.Number); ok {
			if v.CanSet() {
				v.Set(reflect.ValueOf(numberValue(n)))
			}
			return
		}
		exactNumbers(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				exactNumbers(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			exactNumbers(v.Index(i))
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			e := iter.Value()
			if n, ok := e.Interface().(json.Number); ok && e.Kind() == reflect.Interface {
				v.SetMapIndex(iter.Key(), reflect.ValueOf(numberValue(n)))
				continue
			}
			exactNumbers(e)
		}
	}
}

// numberValue is a JSON number as the Store returns numbers.
func numberValue(n json.Number) any {
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return i
	}
	f, _ := strconv.ParseFloat(string(n), 64)
	return f
}
