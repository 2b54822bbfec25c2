package projectdata

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/ncruces/go-sqlite3"
)

// TestBoundedFunctionsAnswerAsSQLite: the ports of instr, replace and
// trim on readers give SQLite's own answers (type and bytes) for text,
// blobs, numbers, NULL, invalid UTF-8 and NUL bytes.
func TestBoundedFunctionsAnswerAsSQLite(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "f.db")
	builtin, err := sqlite3.Open(path)
	is.NoErr(err)
	defer builtin.Close()
	is.NoErr(builtin.Exec(`CREATE TABLE x (a)`))
	ported, err := openConn(path, true, time.Second)
	is.NoErr(err)
	defer ported.close()

	const sql = `SELECT instr(?1, ?2), replace(?1, ?2, ?3), trim(?1, ?2), ltrim(?1, ?2), rtrim(?1, ?2), instr(?2, ?1), replace(?1, ?3, ?2)`
	parts := []string{"", "a", "b", "ab", "é", "\xc3", "\xa9", "\x00", "€", "\xf0\x9f\x98\x80", "\xff", "  ", "1", ".5",
		"\xc3" + strings.Repeat("\x80", 256)} // a "character" longer than 255 bytes
	value := func(r *rand.Rand) any {
		switch r.IntN(8) {
		case 0:
			return nil
		case 1:
			return r.Int64N(200) - 100
		case 2:
			return float64(r.IntN(100)) / 4
		}
		var b []byte
		for range r.IntN(12) {
			b = append(b, parts[r.IntN(len(parts))]...)
		}
		if r.IntN(3) == 0 {
			return b
		}
		return string(b)
	}
	run := func(db *sqlite3.Conn, args []any) string {
		st, _, err := db.Prepare(sql)
		is.NoErr(err)
		defer st.Close()
		is.NoErr(bindAll(st, args))
		var out bytes.Buffer
		if st.Step() {
			for i := range st.ColumnCount() {
				fmt.Fprintf(&out, "%v:%q ", st.ColumnType(i), st.ColumnRawBlob(i))
			}
		}
		if err := st.Err(); err != nil {
			fmt.Fprintf(&out, "error %v", err)
		}
		return out.String()
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		args := []any{value(r), value(r), value(r)}
		want, got := run(builtin, args), run(ported.db, args)
		if want != got {
			t.Fatalf("%q:\nSQLite %s\nported %s", args, want, got)
		}
	}
}
