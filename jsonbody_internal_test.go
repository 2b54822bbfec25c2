package projectdata

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/matryer/is"
)

// TestJSONStreamInternsKeys: the keys that repeat from one object to the
// next are one string each, whether among the first few keys (kept without
// a map) or after them, and a stream interns at most maxInternedKeys.
func TestJSONStreamInternsKeys(t *testing.T) {
	is := is.New(t)
	readKeys := func(js *jsonStream) []string {
		var keys []string
		is.NoErr(js.fields(func(key string) error {
			keys = append(keys, key)
			_, err := js.scalar()
			return err
		}))
		return keys
	}
	row := func(n int) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"column_%d":%d`, i, i)
		}
		return b.String() + "}"
	}
	for _, n := range []int{1, 8, 9, 40} {
		js := newJSONBytes([]byte("[" + row(n) + "," + row(n) + "]"))
		tok, err := js.token()
		is.NoErr(err)
		is.Equal(tok, json.Delim('['))
		var rows [][]string
		is.NoErr(js.array(func(int) error {
			tok, err := js.token()
			is.True(err == nil && tok == json.Delim('{'))
			rows = append(rows, readKeys(js))
			return nil
		}))
		is.Equal(len(rows), 2)
		for i := range n {
			is.Equal(rows[0][i], fmt.Sprintf("column_%d", i))
			is.Equal(rows[1][i], rows[0][i])
			is.True(unsafe.StringData(rows[1][i]) == unsafe.StringData(rows[0][i])) // the same string
		}
	}

	// Past maxInternedKeys, keys are new strings: a body of many distinct
	// keys grows no table.
	js := newJSONBytes([]byte(row(maxInternedKeys + 10)))
	tok, err := js.token()
	is.True(err == nil && tok == json.Delim('{'))
	is.Equal(len(readKeys(js)), maxInternedKeys+10)
	is.Equal(js.nFirst+len(js.keys), maxInternedKeys)
}
