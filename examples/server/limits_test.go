package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// Every name -limit takes sets an option of its own.
func TestLimitsSetTheirOptions(t *testing.T) {
	set := map[string]string{} // option field → the name that set it
	for _, sl := range serviceLimitNames {
		t.Run(sl.name, func(t *testing.T) {
			var l serviceLimits
			err := l.Set(sl.name + "=7")
			if err != nil {
				err = l.Set(sl.name + "=7s")
			}
			if err != nil {
				t.Fatal(err)
			}
			changed := nonZeroFields(l.store)
			changed = append(changed, nonZeroFields(l.api)...)
			if len(changed) != 1 {
				t.Fatalf("%s set %v, want one option", sl.name, changed)
			}
			if other, ok := set[changed[0]]; ok {
				t.Fatalf("%s and %s both set %s", sl.name, other, changed[0])
			}
			set[changed[0]] = sl.name
			if !strings.Contains(sl.doc, "("+strings.TrimPrefix(strings.TrimPrefix(changed[0], "projectdata.Options."), "httpapi.Options.")+";") {
				t.Errorf("the doc of %s, %q, does not name %s", sl.name, sl.doc, changed[0])
			}
		})
	}
}

// nonZeroFields names the fields of an options struct that are set.
func nonZeroFields(opts any) []string {
	v := reflect.ValueOf(opts)
	var names []string
	for i := range v.NumField() {
		if !v.Field(i).IsZero() {
			names = append(names, v.Type().String()+"."+v.Type().Field(i).Name)
		}
	}
	return names
}

func TestLimitErrors(t *testing.T) {
	for _, c := range []struct{ arg, says string }{
		{"bogus=1", `no limit "bogus"`},
		{"query-timeout", "want NAME=VALUE"},
		{"query-timeout=-1s", "query-timeout: want a duration"},
		{"query-timeout=1", "query-timeout: want a duration"},
		{"max-readers=-1", "max-readers: want a whole number"},
		{"max-body-bytes=8MB", "max-body-bytes: want a number of bytes"},
	} {
		t.Run(c.arg, func(t *testing.T) {
			is := is.New(t)
			out, errOut, status := runServerCmd(t, "serve", "-data", t.TempDir(), "-limit", c.arg)
			is.Equal(status, 2)
			is.Equal(out, "")
			is.True(strings.Contains(errOut, c.says)) // the reason
			is.Equal(strings.Count(errOut, "\n"), 1)
		})
	}
}

// A limit given to serve bounds the running server.
func TestServeLimitBoundsTheServer(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	startServer(t, "serve", "-addr", addr, "-data", dir, "-limit", "max-insert-rows=2", "-limit", "max-body-bytes=4096")
	var out bytes.Buffer
	is.NoErr(run(context.Background(), []string{"project", "create", "-data", dir, "acme"}, &out, io.Discard))
	token := strings.TrimSpace(out.String())
	waitUp(t, addr)
	send := func(method, path, body string) (int, string) {
		req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		is.NoErr(err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		is.NoErr(err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	status, _ := send("POST", "/projects/acme/table", `{"table_name":"t","columns":[{"column_name":"v"}]}`)
	is.Equal(status, 201) // body
	status, _ = send("POST", "/projects/acme/records/t", `[{"v":"a"},{"v":"b"}]`)
	is.Equal(status, 201) // two rows: the limit
	status, body := send("POST", "/projects/acme/records/t", `[{"v":"a"},{"v":"b"},{"v":"c"}]`)
	is.Equal(status, 413)
	is.True(strings.Contains(body, `"too_many_rows"`))
	status, body = send("POST", "/projects/acme/records/t", `[{"v":"`+strings.Repeat("x", 5000)+`"}]`)
	is.Equal(status, 413)
	is.True(strings.Contains(body, `"payload_too_large"`))
}
