package projectdata_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/projectdata/projectdata"
)

// BenchmarkDecodeRows decodes an insert body of 1,000 rows with the
// streaming decoder (early refusal, values checked as they come), beside
// encoding/json decoding the same body whole into maps, in the same run:
// the cost of refusing early.
func BenchmarkDecodeRows(b *testing.B) {
	var body strings.Builder
	body.WriteString("[")
	for j := range 1000 {
		if j > 0 {
			body.WriteString(",")
		}
		fmt.Fprintf(&body, `{"name":"item %d","qty":%d,"price":%d.25,"note":"bench"}`, j, j, j)
	}
	body.WriteString("]")
	payload := []byte(body.String())
	b.Run("streaming", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(payload)))
		for b.Loop() {
			if _, err := projectdata.DecodeRows(bytes.NewReader(payload), 1000); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding_json_whole", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(payload)))
		for b.Loop() {
			var rows []map[string]any
			d := json.NewDecoder(bytes.NewReader(payload))
			d.UseNumber()
			if err := d.Decode(&rows); err != nil {
				b.Fatal(err)
			}
		}
	})
}
