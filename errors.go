package projectdata

import (
	"fmt"

	"github.com/pkg/errors"
)

// Code is an error code of the specification or of the contract. Every error
// the Store returns wraps exactly one Code, so errors.Is(err, ErrTableNotFound)
// works and ErrorCode(err) tells the code of any error.
//
// A Code is itself an error: the sentinels below are constants.
type Code string

// Error returns the code itself.
func (c Code) Error() string { return string(c) }

// Error codes named by the specification.
const (
	ErrPermissionDenied        Code = "permission_denied"
	ErrInvalidToken            Code = "invalid_token"
	ErrWriteSQLForbidden       Code = "write_sql_forbidden"
	ErrQueryTableDenied        Code = "query_table_denied"
	ErrQueryBudgetExceeded     Code = "query_budget_exceeded"
	ErrQueryResultTooLarge     Code = "query_result_too_large"
	ErrWhereRequired           Code = "where_required"
	ErrIndexExists             Code = "index_exists"
	ErrIndexNotManaged         Code = "index_not_managed"
	ErrTableNotFound           Code = "table_not_found"
	ErrColumnNotFound          Code = "column_not_found"
	ErrRecordNotFound          Code = "record_not_found"
	ErrProjectNotFound         Code = "project_not_found"
	ErrInvalidProjectName      Code = "invalid_project_name"
	ErrInvalidColumnValue      Code = "invalid_column_value"
	ErrColumnTypeLocked        Code = "column_type_locked"
	ErrUnsupportedColumnChange Code = "unsupported_column_change"
	ErrInvalidExportStatus     Code = "invalid_export_status"
	ErrForbidden               Code = "forbidden"
)

// Error codes fixed by the contract where the specification is silent.
const (
	ErrInvalidJSON           Code = "invalid_json"
	ErrInvalidProjectSlug    Code = "invalid_project_slug"
	ErrInvalidTableName      Code = "invalid_table_name"
	ErrInvalidColumnName     Code = "invalid_column_name"
	ErrInvalidColumnType     Code = "invalid_column_type"
	ErrInvalidColumnChange   Code = "invalid_column_change"
	ErrInvalidWhere          Code = "invalid_where"
	ErrInvalidExportFormat   Code = "invalid_export_format"
	ErrInvalidTokenType      Code = "invalid_token_type"
	ErrInvalidExpiresAt      Code = "invalid_expires_at"
	ErrInvalidOperationRunID Code = "invalid_operation_run_id"
	ErrInvalidRequest        Code = "invalid_request"
	ErrNotNullViolation      Code = "not_null_violation"
	ErrIndexNotFound         Code = "index_not_found"
	ErrExportNotFound        Code = "export_not_found"
	ErrRouteNotFound         Code = "route_not_found"
	ErrMethodNotAllowed      Code = "method_not_allowed"
	ErrTableExists           Code = "table_exists"
	ErrColumnExists          Code = "column_exists"
	ErrUniqueViolation       Code = "unique_violation"
	ErrPayloadTooLarge       Code = "payload_too_large"
	ErrTooManyRows           Code = "too_many_rows"
	ErrUnsupportedMediaType  Code = "unsupported_media_type"
	ErrInternal              Code = "internal_error"
)

// Error codes added by the contract for bounded resources, records at
// scale, the change feed and idempotent writes (CONTRACT §10–§16).
const (
	ErrInvalidCursor          Code = "invalid_cursor"
	ErrInvalidIdempotencyKey  Code = "invalid_idempotency_key"
	ErrIdempotencyKeyInFlight Code = "idempotency_key_in_flight"
	ErrIdempotencyKeyReused   Code = "idempotency_key_reused"
	ErrChangesExpired         Code = "changes_expired"
	ErrServerBusy             Code = "server_busy"
	// ErrExportQuotaExceeded is an export refused, or stopped while its
	// file was written, because the project's export files would take more
	// than Options.MaxExportBytes (HTTP 507).
	ErrExportQuotaExceeded Code = "export_quota_exceeded"
)

// Error codes the contract's status tables do not list: project_exists,
// of creating a project (the Go API and the server's command line only);
// token_not_found, of revoking a token that does not exist (HTTP 404);
// store_closed, of a closed Store, which the HTTP health check answers
// while the server shuts down (HTTP 503); range_not_satisfiable.
const (
	ErrProjectExists Code = "project_exists"
	ErrTokenNotFound Code = "token_not_found"
	ErrStoreClosed   Code = "store_closed"
	// ErrRangeNotSatisfiable is an export download whose Range lies
	// outside the file (HTTP 416).
	ErrRangeNotSatisfiable Code = "range_not_satisfiable"
)

// Error is a failure with a code and a message written for people: it names
// the table, column, row index or value at fault and never internals.
// Use errors.As to read the message apart from the code.
type Error struct {
	Code    Code
	Message string
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Unwrap returns the code, so errors.Is(err, ErrTableNotFound) matches.
func (e *Error) Unwrap() error { return e.Code }

// errorf returns an *Error with the code and a formatted message.
func errorf(code Code, format string, args ...any) error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of any error the Store returns: the Code it
// wraps, or ErrInternal for an unexpected failure and for a context's error
// (context.Canceled, context.DeadlineExceeded), which a call whose ctx ends
// returns as it is. It returns "" for nil.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var c Code
	if errors.As(err, &c) {
		return c
	}
	return ErrInternal
}
