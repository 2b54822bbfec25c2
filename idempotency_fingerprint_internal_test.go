package projectdata

import (
	"crypto/sha256"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/matryer/is"
)

// TestFingerprintJSONIsJSONMarshal: the arguments a Go caller's fingerprint
// hashes are written byte for byte as json.Marshal writes them, by the
// encoder of its own or, for types it leaves alone, by json.Marshal.
func TestFingerprintJSONIsJSONMarshal(t *testing.T) {
	cases := []struct {
		name string
		args []any
		own  bool // written without json.Marshal
	}{
		{"Insert", []any{"items", []Row{{"name": "item", "qty": 1}, {"qty": int64(-7), "price": 2.5, "ok": true, "none": nil}}}, true},
		{"EscapedText", []any{`a<b>&"c"\d` + "\n\t\x01\u2028\u2029é\xff", Row{"k<&>\u2028": "v"}}, true},
		{"Floats", []any{[]any{0.0, math.Copysign(0, -1), 0.1, 1e20, 1e21, 1.5e21, 1e-6, 1e-7, 123456789.125, -3e-10, math.MaxFloat64, math.SmallestNonzeroFloat64}}, true},
		{"Ints", []any{[]any{0, -1, math.MaxInt64, int64(math.MinInt64)}}, true},
		{"NilsAndEmpties", []any{[]Row(nil), []Row{}, Row(nil), Row{}, []any(nil), []any{}, map[string]any{"a": []any{map[string]any{}}}}, true},
		{"ManyKeys", []any{Row{"t": 1, "s": 2, "r": 3, "q": 4, "p": 5, "o": 6, "n": 7, "m": 8, "l": 9, "k": 10, "j": 11, "i": 12, "h": 13, "g": 14, "f": 15, "e": 16, "d": 17, "c": 18, "b": 19, "a": 20}}, true},
		{"OtherTypes", []any{"items", Row{"at": time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "n": json.Number("12"), "f": float32(0.1), "u": uint8(3)}}, false},
		{"Structs", []any{TableDef{Name: "items", Columns: []ColumnDef{{Name: "sku", Unique: true}}}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			want, err := json.Marshal(c.args)
			is.NoErr(err)
			got, own := appendArgsJSON(nil, c.args)
			is.Equal(own, c.own)
			if own {
				is.Equal(string(got), string(want))
			}
			fp, err := fingerprint(Idempotency{}, writeCall{op: OpInsertRecords, args: c.args})
			is.NoErr(err)
			sum := sha256.Sum256(append([]byte("call\x00"+string(OpInsertRecords)+"\x00"), want...))
			is.Equal(fp, sum[:]) // the fingerprint of earlier releases
		})
	}
	t.Run("NaNIsRefused", func(t *testing.T) {
		_, err := fingerprint(Idempotency{}, writeCall{op: OpInsertRecords, args: []any{"items", []Row{{"x": math.NaN()}}}})
		if ErrorCode(err) != ErrInvalidRequest {
			t.Fatalf("got %v, want %s", err, ErrInvalidRequest)
		}
	})
}

// TestInsertAnswerJSONIsJSONMarshal: an insert's stored answer is written
// byte for byte as json.Marshal writes it, without reflection for the
// keys it knows, by json.Marshal for others.
func TestInsertAnswerJSONIsJSONMarshal(t *testing.T) {
	for _, r := range []InsertResult{
		{Table: "items", InsertedCount: 1, InsertedIDs: []any{int64(1)}},
		{Table: "a<&>\"b", InsertedCount: 3, InsertedIDs: []any{"x", int64(-2), 2.5}},
		{Table: "empty"},
		{Table: "blobs", InsertedCount: 1, InsertedIDs: []any{[]byte{1, 2, 3}}}, // json.Marshal's base64
	} {
		is := is.New(t)
		want, err := json.Marshal([]any{&r})
		is.NoErr(err)
		got, err := encodeAnswer(nil, []any{&r})
		is.NoErr(err)
		is.Equal(string(got), string(want))
	}
}
