package httpapi_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// volatile matches what differs between runs: request ids, export ids and
// token secrets; duration matches a query's timing.
var (
	volatile = regexp.MustCompile(`req_[0-9a-f]+|exp_[a-z0-9]+|pat_[a-z2-7]+`)
	duration = regexp.MustCompile(`"duration_ms": [0-9.e+-]+`)
)

// TestGoldenResponses compares whole response bodies of a session with the
// files in testdata/golden (go test -run Golden -update rewrites them).
func TestGoldenResponses(t *testing.T) {
	a := newAPI(t, nil)
	steps := []struct {
		name, method, path, token, body string
	}{
		{"create_table", "POST", "/projects/acme/table", a.admin, `{"table_name":"orders","display_name":"Orders","columns":[
			{"column_name":"item","is_nullable":false},
			{"column_name":"qty","column_type":"INTEGER","default_value":1},
			{"column_name":"price","column_type":"REAL"},
			{"column_name":"paid","column_type":"BOOLEAN","default_value":false},
			{"column_name":"due","column_type":"DATETIME"},
			{"column_name":"sku","is_unique":true}]}`},
		{"insert", "POST", "/projects/acme/records/orders", a.write, `[
			{"item":"apple","qty":3,"price":0.5,"paid":true,"due":"2026-12-01T00:00:00Z","sku":"A-1"},
			{"item":"pear"},
			{"item":"fig, dried","qty":"12","price":"2.25","sku":"F-9"}]`},
		{"list_records", "GET", "/projects/acme/records/orders?order=-qty", a.read, ""},
		{"query", "POST", "/projects/acme/query", a.read, `{"sql":"SELECT item, qty * price AS total FROM orders WHERE price IS NOT NULL ORDER BY total DESC"}`},
		{"create_index", "POST", "/projects/acme/indexes/orders", a.admin, `{"columns":["paid","due"]}`},
		{"list_columns", "GET", "/projects/acme/column/orders", a.read, ""},
		{"create_export", "POST", "/projects/acme/exports", a.write, `{"table":"orders","format":"csv"}`},
		{"list_tokens", "GET", "/projects/acme/auth/tokens", a.admin, ""},
		{"where_required", "DELETE", "/projects/acme/records/orders", a.write, `{"where":{}}`},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			res := a.do(s.method, s.path, s.token, s.body, "X-Operation-Key", "golden", "X-Operation-Run-Id", "oprun_golden")
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, res.Body, "", "  "); err != nil {
				t.Fatalf("not JSON: %s", res.Body)
			}
			got := volatile.ReplaceAllFunc(pretty.Bytes(), func(m []byte) []byte {
				return append(m[:bytes.IndexByte(m, '_')+1:bytes.IndexByte(m, '_')+1], "…"...)
			})
			got = duration.ReplaceAll(got, []byte(`"duration_ms": 0`))
			path := filepath.Join("testdata", "golden", s.name+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from %s:\n%s", s.name, path, got)
			}
		})
	}
}
