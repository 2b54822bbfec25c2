package httpapi

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
)

// TestEnvelopeIsWhatEncodingJSONWrites compares the envelope writer with
// encoding/json's encoding of the same envelope, byte for byte.
func TestEnvelopeIsWhatEncodingJSONWrites(t *testing.T) {
	at := projectdata.Timestamp{Time: time.Date(2026, 11, 23, 1, 2, 3, 456789000, time.FixedZone("x", 3600))}
	odd := "<a> & \"b\"\\ \n\t\x01 é \u2028 \xff"
	cases := map[string]envelope{
		"nil data":         {OK: true},
		"raw record":       {OK: true, Data: json.RawMessage(`{"row":{"id":1,"name":"\u003cb\u003e"},"table":"t"}`)},
		"nil raw record":   {OK: true, Data: json.RawMessage(nil)},
		"struct data":      {OK: true, Data: projectdata.InsertResult{Table: "items", InsertedCount: 2, InsertedIDs: []any{int64(1), "k<"}}},
		"map data":         {OK: true, Data: map[string]any{"z": 1.5, "a": odd, "n": nil}},
		"string data":      {OK: true, Data: odd},
		"plain string":     {OK: true, Data: "plain"},
		"error":            {Error: &errorBody{Code: projectdata.ErrInvalidJSON, Message: odd}},
		"operation":        {OK: true, Data: []int{1}, OperationKey: &odd, OperationRunID: odd, OperationGroupingStatus: "grouped"},
		"run without key":  {OK: true, OperationKey: new(string), OperationRunID: "oprun_1", OperationGroupingStatus: "accepted_provided_run"},
		"odd request id":   {OK: true, RequestID: odd},
		"plain request":    {OK: true, RequestID: "req_0123456789abcdef01234567"},
		"html request id":  {OK: true, RequestID: "<a>&b"},
		"empty everything": {},
	}
	for name, env := range cases {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			if env.RequestID == "" && name != "empty everything" {
				env.RequestID = "req_0123456789abcdef01234567"
			}
			env.Meta.GeneratedAt = at
			var want, got bytes.Buffer
			is.NoErr(json.NewEncoder(&want).Encode(env))
			is.NoErr(appendEnvelope(&got, &env))
			is.Equal(got.String(), want.String())
		})
	}
}

// TestEnvelopeEncodingErrorLeavesNothing: data encoding/json refuses fails
// the envelope (answered as an internal error by writeEnvelope).
func TestEnvelopeEncodingErrorLeavesNothing(t *testing.T) {
	is := is.New(t)
	var buf bytes.Buffer
	err := appendJSON(&buf, map[string]any{"f": func() {}})
	is.True(err != nil)
	is.Equal(buf.Len(), 0)
}
