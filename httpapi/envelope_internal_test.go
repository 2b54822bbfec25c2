package httpapi

import (
	"bytes"
	"encoding/json"
	"strings"
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

// TestEveryCodeHasTheContractsStatus checks the status map against the
// contract's tables (CONTRACT §8 and §16), code by code.
func TestEveryCodeHasTheContractsStatus(t *testing.T) {
	contract := map[int]string{
		400: "invalid_json invalid_project_name invalid_project_slug invalid_table_name invalid_column_name invalid_column_type invalid_column_value invalid_column_change unsupported_column_change invalid_where where_required write_sql_forbidden invalid_export_status invalid_export_format invalid_token_type invalid_expires_at invalid_operation_run_id invalid_request not_null_violation invalid_cursor invalid_idempotency_key",
		401: "invalid_token",
		403: "permission_denied forbidden query_table_denied",
		404: "project_not_found table_not_found column_not_found record_not_found index_not_found export_not_found route_not_found",
		405: "method_not_allowed",
		409: "table_exists column_exists index_exists index_not_managed column_type_locked unique_violation idempotency_key_in_flight",
		410: "changes_expired",
		413: "query_result_too_large payload_too_large too_many_rows",
		415: "unsupported_media_type",
		422: "query_budget_exceeded idempotency_key_reused",
		500: "internal_error",
		503: "server_busy",
		507: "export_quota_exceeded",
	}
	for status, codes := range contract {
		for _, code := range strings.Fields(codes) {
			if got, ok := statusOf[projectdata.Code(code)]; !ok || got != status {
				t.Errorf("%s: status %d, want %d", code, got, status)
			}
		}
	}
}
