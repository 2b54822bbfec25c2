package httpapi

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/julienschmidt/httprouter"

	pd "github.com/projectdata/projectdata"
)

// openAPIRoute is GET /openapi.json, served without a token.
const openAPIRoute = "/openapi.json"

// apiRoute describes one route of the API for the OpenAPI document: the
// document is made from this table and the one status map (statusOf), so
// that it is the one description of routes, bodies and error codes.
type apiRoute struct {
	method, path string // path in OpenAPI form: /projects/{project}/…
	summary      string
	query        []apiParam
	body         string    // JSON Schema of the request body; "" when none
	status       int       // status of a success
	data         string    // JSON Schema of the envelope's data; "" when the answer is not an envelope
	media        string    // media type of a success that is not an envelope
	codes        []pd.Code // error codes besides those every project route has
	write        bool      // a write: Idempotency-Key stores its answer
	optionalBody bool      // the body may be left out
	ranges       bool      // a file served with conditional and range answers (http.ServeContent)
}

// apiParam is a query parameter.
type apiParam struct{ name, schema, doc string }

// Error codes that routes share.
var (
	// projectCodes are the codes any project route can answer: the token,
	// the project, the headers, the server's state.
	projectCodes = []pd.Code{pd.ErrInvalidToken, pd.ErrPermissionDenied, pd.ErrForbidden,
		pd.ErrProjectNotFound, pd.ErrInvalidProjectSlug, pd.ErrInvalidOperationRunID,
		pd.ErrInvalidIdempotencyKey, pd.ErrInvalidRequest, pd.ErrInternal, pd.ErrStoreClosed, pd.ErrServerBusy}
	// bodyCodes are the codes of a route that reads a JSON body.
	bodyCodes = []pd.Code{pd.ErrInvalidJSON, pd.ErrPayloadTooLarge, pd.ErrUnsupportedMediaType}
	// writeCodes are the codes of an idempotent write.
	writeCodes = []pd.Code{pd.ErrIdempotencyKeyInFlight, pd.ErrIdempotencyKeyReused}
	// tableCodes are the codes of a route naming a table.
	tableCodes = []pd.Code{pd.ErrInvalidTableName, pd.ErrTableNotFound}
	// valueCodes are the codes of a route writing column values.
	valueCodes = []pd.Code{pd.ErrInvalidColumnName, pd.ErrColumnNotFound, pd.ErrInvalidColumnValue,
		pd.ErrNotNullViolation, pd.ErrUniqueViolation}
	// whereCodes are the codes of a route reading a where.
	whereCodes = []pd.Code{pd.ErrInvalidWhere, pd.ErrWhereRequired, pd.ErrInvalidColumnName,
		pd.ErrColumnNotFound, pd.ErrInvalidColumnValue}
)

func codes(sets ...[]pd.Code) []pd.Code {
	var all []pd.Code
	for _, s := range sets {
		all = append(all, s...)
	}
	return all
}

func ref(name string) string { return `{"$ref":"#/components/schemas/` + name + `"}` }

func object(required string, props ...string) string {
	return `{"type":"object","required":[` + required + `],"properties":{` + strings.Join(props, ",") + `}}`
}

const (
	anyValue   = `{}`
	intSchema  = `{"type":"integer"}`
	strSchema  = `{"type":"string"}`
	boolSchema = `{"type":"boolean"}`
)

var (
	limitParam  = apiParam{"limit", intSchema, "Page size; below 1 is taken as 1."}
	offsetParam = apiParam{"offset", `{"type":"integer","minimum":0}`, "Rows to skip."}
	tableData   = object(`"table"`, `"table":`+ref("Table"))
	columnData  = object(`"table","column"`, `"table":`+strSchema, `"column":`+ref("Column"))
)

// apiRoutes is every route of the API, in the order of routes().
var apiRoutes = []apiRoute{
	{method: "GET", path: "/projects/{project}", summary: "Get the project and its table count", status: 200,
		data: object(`"project","table_count"`, `"project":`+ref("Project"), `"table_count":`+intSchema)},
	{method: "PATCH", path: "/projects/{project}", summary: "Rename the project", status: 200, write: true,
		body: object(`"project_name"`, `"project_name":`+strSchema),
		data: object(`"project"`, `"project":`+ref("Project")), codes: []pd.Code{pd.ErrInvalidProjectName}},

	{method: "POST", path: "/projects/{project}/auth/tokens", summary: "Create a token (its secret is shown once)", status: 201,
		body: `{"type":"object","properties":{"token_name":{"type":"string"},"token_type":{"type":"string"},"role":{"enum":["admin","write","read"]},"expires_at":{"type":["string","null"]}}}`,
		data: object(`"token"`, `"token":`+ref("CreatedToken")), codes: []pd.Code{pd.ErrInvalidTokenType, pd.ErrInvalidExpiresAt}, optionalBody: true},
	{method: "GET", path: "/projects/{project}/auth/tokens", summary: "List tokens (never their secrets)", status: 200,
		data: object(`"tokens"`, `"tokens":{"type":"array","items":`+ref("Token")+`}`)},
	{method: "DELETE", path: "/projects/{project}/auth/tokens/{token_id}", summary: "Revoke a token", status: 200, write: true,
		data: object(`"token"`, `"token":`+ref("Token")), codes: []pd.Code{pd.ErrTokenNotFound}},

	{method: "GET", path: "/projects/{project}/table", summary: "List tables", status: 200,
		data: object(`"tables"`, `"tables":{"type":"array","items":`+ref("Table")+`}`)},
	{method: "POST", path: "/projects/{project}/table", summary: "Create a table with its columns", status: 201, write: true,
		body:  object(`"table_name"`, `"table_name":`+strSchema, `"display_name":{"type":["string","null"]}`, `"columns":{"type":"array","items":`+ref("ColumnDef")+`}`),
		data:  object(`"table","columns"`, `"table":`+ref("Table"), `"columns":{"type":"array","items":`+ref("Column")+`}`),
		codes: []pd.Code{pd.ErrInvalidTableName, pd.ErrTableExists, pd.ErrInvalidColumnName, pd.ErrInvalidColumnType, pd.ErrInvalidColumnValue, pd.ErrColumnExists}},
	{method: "PATCH", path: "/projects/{project}/table/{table}", summary: "Change a table's display name", status: 200, write: true,
		body: `{"type":"object","properties":{"display_name":{"type":["string","null"]}}}`, data: tableData, codes: tableCodes},
	{method: "DELETE", path: "/projects/{project}/table/{table}", summary: "Delete a table and its rows", status: 200, write: true,
		data: object(`"deleted","table_name"`, `"deleted":`+boolSchema, `"table_name":`+strSchema), codes: tableCodes},

	{method: "GET", path: "/projects/{project}/column/{table}", summary: "List a table's columns", status: 200,
		data: object(`"table","columns"`, `"table":`+strSchema, `"columns":{"type":"array","items":`+ref("Column")+`}`), codes: tableCodes},
	{method: "GET", path: "/projects/{project}/column/{table}/{column}", summary: "Get a column", status: 200,
		data: columnData, codes: codes(tableCodes, []pd.Code{pd.ErrInvalidColumnName, pd.ErrColumnNotFound})},
	{method: "POST", path: "/projects/{project}/column/{table}", summary: "Add a column", status: 201, write: true,
		body: ref("ColumnDef"), data: columnData,
		codes: codes(tableCodes, []pd.Code{pd.ErrInvalidColumnName, pd.ErrInvalidColumnType, pd.ErrInvalidColumnValue, pd.ErrColumnExists, pd.ErrInvalidColumnChange, pd.ErrUnsupportedColumnChange})},
	{method: "PATCH", path: "/projects/{project}/column/{table}/{column}", summary: "Rename a column or change its type, nullability, default or uniqueness", status: 200, write: true,
		body: `{"type":"object","properties":{"new_column_name":{"type":"string"},"column_type":{"type":"string"},"is_nullable":{"type":"boolean"},"default_value":{},"is_unique":{"type":"boolean"}}}`,
		data: columnData,
		codes: codes(tableCodes, []pd.Code{pd.ErrInvalidColumnName, pd.ErrColumnNotFound, pd.ErrInvalidColumnType, pd.ErrInvalidColumnValue,
			pd.ErrInvalidColumnChange, pd.ErrUnsupportedColumnChange, pd.ErrColumnTypeLocked, pd.ErrColumnExists, pd.ErrUniqueViolation, pd.ErrNotNullViolation})},

	{method: "POST", path: "/projects/{project}/records/{table}", summary: "Insert one row object or an array of them", status: 201, write: true,
		body:  `{"oneOf":[` + ref("Row") + `,{"type":"array","items":` + ref("Row") + `}]}`,
		data:  object(`"table","inserted_count","inserted_ids"`, `"table":`+strSchema, `"inserted_count":`+intSchema, `"inserted_ids":{"type":"array"}`),
		codes: codes(tableCodes, valueCodes, []pd.Code{pd.ErrTooManyRows})},
	{method: "GET", path: "/projects/{project}/records/{table}", summary: "List rows: filter, order, columns, keyset or offset pages, count", status: 200,
		query: []apiParam{
			{"where", strSchema, "URL-encoded JSON: an object of column equalities or an array of {column, op, value} conditions."},
			{"order", strSchema, "Comma-separated columns (at most 32), each optionally prefixed with - for descending."},
			{"columns", strSchema, "Comma-separated columns to return."},
			limitParam,
			{"after", strSchema, "next_cursor of the previous page."},
			offsetParam,
			{"count", `{"enum":["exact","none"]}`, "Whether total is counted."},
		},
		data: object(`"table","rows","limit","offset","next_cursor","truncated"`, `"table":`+strSchema, `"rows":{"type":"array","items":`+ref("Row")+`}`,
			`"total":{"type":["integer","null"]}`, `"limit":`+intSchema, `"offset":`+intSchema, `"next_cursor":{"type":["string","null"]}`, `"truncated":`+boolSchema),
		codes: codes(tableCodes, whereCodes, []pd.Code{pd.ErrInvalidCursor, pd.ErrQueryBudgetExceeded, pd.ErrQueryResultTooLarge})},
	{method: "GET", path: "/projects/{project}/records/{table}/{id}", summary: "Get one row by primary key", status: 200,
		data: object(`"table","row"`, `"table":`+strSchema, `"row":`+ref("Row")), codes: codes(tableCodes, []pd.Code{pd.ErrRecordNotFound, pd.ErrInvalidColumnValue, pd.ErrQueryResultTooLarge})},
	{method: "DELETE", path: "/projects/{project}/records/{table}/{id}", summary: "Delete one row by primary key", status: 200, write: true,
		data: object(`"deleted","table","id"`, `"deleted":`+boolSchema, `"table":`+strSchema, `"id":`+strSchema), codes: codes(tableCodes, []pd.Code{pd.ErrRecordNotFound, pd.ErrInvalidColumnValue})},
	{method: "PATCH", path: "/projects/{project}/records/{table}/{id}", summary: "Change columns of one row by primary key", status: 200, write: true,
		body: ref("Row"), data: object(`"table","row"`, `"table":`+strSchema, `"row":`+ref("Row")),
		codes: codes(tableCodes, valueCodes, []pd.Code{pd.ErrRecordNotFound, pd.ErrQueryResultTooLarge})},
	{method: "PATCH", path: "/projects/{project}/records/{table}", summary: "Change the rows a where matches", status: 200, write: true,
		body: object(`"data"`, `"data":`+ref("Row"), `"where":`+ref("Where"), `"allow_all":`+boolSchema), data: ref("BulkResult"),
		codes: codes(tableCodes, valueCodes, whereCodes, []pd.Code{pd.ErrQueryBudgetExceeded})},
	{method: "DELETE", path: "/projects/{project}/records/{table}", summary: "Delete the rows a where matches", status: 200, write: true,
		body: object(``, `"where":`+ref("Where"), `"allow_all":`+boolSchema), data: ref("BulkResult"),
		codes: codes(tableCodes, whereCodes, []pd.Code{pd.ErrQueryBudgetExceeded})},

	{method: "POST", path: "/projects/{project}/query", summary: "Run one read-only SELECT with bound parameters", status: 200,
		body: `{"type":"object","additionalProperties":false,"anyOf":[{"required":["sql"]},{"required":["query"]}],"properties":{"sql":{"type":"string"},"query":{"type":"string"},` +
			`"params":{"description":"An array for ? parameters, an object for :name parameters.","type":["array","object"]},"limit":{"type":"integer"}}}`,
		data: object(`"rows","row_count","limit","duration_ms","columns","truncated"`, `"rows":{"type":"array","items":`+ref("Row")+`}`, `"row_count":`+intSchema,
			`"limit":`+intSchema, `"duration_ms":{"type":"number"}`, `"columns":{"type":"array","items":{"type":"string"}}`, `"truncated":`+boolSchema),
		codes: []pd.Code{pd.ErrWriteSQLForbidden, pd.ErrQueryTableDenied, pd.ErrQueryBudgetExceeded, pd.ErrQueryResultTooLarge}},

	{method: "GET", path: "/projects/{project}/indexes/{table}", summary: "List a table's indexes", status: 200,
		data: object(`"table","indexes"`, `"table":`+strSchema, `"indexes":{"type":"array","items":`+ref("Index")+`}`), codes: tableCodes},
	{method: "POST", path: "/projects/{project}/indexes/{table}", summary: "Create an index", status: 201, write: true,
		body:  object(`"columns"`, `"columns":{"type":"array","items":{"type":"string"}}`, `"index_name":`+strSchema, `"unique":`+boolSchema),
		data:  object(`"index"`, `"index":`+ref("Index")),
		codes: codes(tableCodes, []pd.Code{pd.ErrInvalidColumnName, pd.ErrColumnNotFound, pd.ErrIndexExists, pd.ErrUniqueViolation})},
	{method: "DELETE", path: "/projects/{project}/indexes/{table}/{index}", summary: "Drop an index this API created", status: 200, write: true,
		data: object(`"deleted","index_name"`, `"deleted":`+boolSchema, `"index_name":`+strSchema), codes: codes(tableCodes, []pd.Code{pd.ErrIndexNotFound, pd.ErrIndexNotManaged})},

	{method: "GET", path: "/projects/{project}/exports", summary: "List exports", status: 200,
		query: []apiParam{{"status", `{"enum":["ready","not_found","all"],"default":"all"}`, "Which exports: ready, not_found, or all (the default)."}, limitParam, offsetParam},
		data:  object(`"exports","total","limit","offset"`, `"exports":{"type":"array","items":`+ref("Export")+`}`, `"total":`+intSchema, `"limit":`+intSchema, `"offset":`+intSchema),
		codes: []pd.Code{pd.ErrInvalidExportStatus}},
	{method: "POST", path: "/projects/{project}/exports", summary: "Export a table to a CSV file, or (kind project_export, admin) the whole project database to a SQLite file", status: 201, write: true,
		body: `{"type":"object","properties":{"kind":{"enum":["` + pd.ExportKindTable + `","` + pd.ExportKindProject + `"]},"table":{"type":"string"},` +
			`"format":{"type":"string","pattern":"^([Cc][Ss][Vv]|[Ss][Qq][Ll][Ii][Tt][Ee])$","description":"csv for a table export, sqlite for a project export (the default of each), in any case."}}}`,
		data: object(`"export"`, `"export":`+ref("Export")), codes: codes(tableCodes, []pd.Code{pd.ErrInvalidExportFormat, pd.ErrExportQuotaExceeded})},
	{method: "DELETE", path: "/projects/{project}/exports/not-found", summary: "Forget exports whose files are gone", status: 200, write: true,
		data: object(`"deleted_count","project","scope","status"`, `"deleted_count":`+intSchema, `"project":`+strSchema, `"scope":`+strSchema, `"status":`+strSchema)},
	{method: "GET", path: "/projects/{project}/export/download/{export}", summary: "Download an export's file (ETag, conditional and range requests). A token runs a bounded number of downloads at once (16 by default): one more is 503 server_busy, with Retry-After", status: 200,
		media: "*/*", ranges: true, codes: []pd.Code{pd.ErrExportNotFound, pd.ErrRangeNotSatisfiable}},

	{method: "GET", path: "/projects/{project}/changes", summary: "List changes after a change id", status: 200,
		query: []apiParam{{"after", `{"type":"integer","minimum":0}`, "Change id to start after; 0 is the beginning."},
			{"tables", strSchema, "Comma-separated tables to keep."}, limitParam},
		data:  object(`"changes","next_after"`, `"changes":{"type":"array","items":`+ref("Change")+`}`, `"next_after":`+intSchema),
		codes: []pd.Code{pd.ErrChangesExpired, pd.ErrInvalidTableName, pd.ErrTableNotFound}},
	{method: "GET", path: "/projects/{project}/changes/stream", summary: "Follow changes as Server-Sent Events (id = change id; a stream from now opens with a ping whose id is where it starts, and a ping may carry the id of the point past other tables' changes; Last-Event-ID resumes). A token holds a bounded number of streams of a project at once (16 by default): one more is 503 server_busy, with Retry-After, before any event", status: 200,
		query: []apiParam{{"after", `{"type":"integer","minimum":0}`, "Change id to start after; default: from now."},
			{"tables", strSchema, "Comma-separated tables to keep."}},
		media: "text/event-stream", codes: []pd.Code{pd.ErrChangesExpired, pd.ErrInvalidTableName, pd.ErrTableNotFound}},
}

// apiSchemas are the shared schemas of bodies and answers.
var apiSchemas = map[string]string{
	"Timestamp": `{"type":"string","format":"date-time"}`,
	"Row":       `{"type":"object","additionalProperties":true}`,
	"Where": `{"oneOf":[{"type":"object","additionalProperties":true},{"type":"array","items":` + object(`"column","op"`,
		`"column":`+strSchema, `"op":{"enum":["=","!=","<","<=",">",">=","like","in","not_in","is_null","is_not_null"]}`, `"value":{}`) + `}]}`,
	"Project": object(`"id","project_slug","project_name","created_at","updated_at"`, `"id":`+intSchema, `"project_slug":`+strSchema,
		`"project_name":`+strSchema, `"created_at":`+ref("Timestamp"), `"updated_at":`+ref("Timestamp")),
	"Token": object(`"id","token_type","token_name","role","expires_at","revoked_at","last_used_at","created_at"`, `"id":`+intSchema,
		`"token_type":`+strSchema, `"token_name":`+strSchema, `"role":`+strSchema, `"expires_at":{"type":["string","null"]}`,
		`"revoked_at":{"type":["string","null"]}`, `"last_used_at":{"type":["string","null"]}`, `"created_at":`+ref("Timestamp")),
	"CreatedToken": object(`"token","token_id","token_type","token_name","role","expires_at"`, `"token":`+strSchema, `"token_id":`+intSchema,
		`"token_type":`+strSchema, `"token_name":`+strSchema, `"role":`+strSchema, `"expires_at":{"type":["string","null"]}`),
	"Table": object(`"id","table_name","display_name","created_at","updated_at"`, `"id":`+intSchema, `"table_name":`+strSchema,
		`"display_name":{"type":["string","null"]}`, `"created_at":`+ref("Timestamp"), `"updated_at":`+ref("Timestamp")),
	"ColumnDef": object(`"column_name"`, `"column_name":`+strSchema, `"column_type":`+strSchema, `"is_nullable":`+boolSchema,
		`"default_value":`+anyValue, `"is_unique":`+boolSchema, `"is_primary":`+boolSchema),
	"Column": object(`"id","table_name","column_name","column_type","is_nullable","default_value","is_primary","is_unique"`, `"id":`+intSchema,
		`"table_name":`+strSchema, `"column_name":`+strSchema, `"column_type":`+strSchema, `"is_nullable":{"enum":[0,1]}`,
		`"default_value":`+anyValue, `"is_primary":{"enum":[0,1]}`, `"is_unique":{"enum":[0,1]}`, `"created_at":`+ref("Timestamp"), `"updated_at":`+ref("Timestamp")),
	"Index": object(`"name","unique","origin","partial","columns","managed","sql"`, `"name":`+strSchema, `"unique":`+boolSchema,
		`"origin":`+strSchema, `"partial":`+boolSchema, `"columns":{"type":"array","items":{"type":"string"}}`, `"managed":`+boolSchema, `"sql":`+strSchema),
	"Export": object(`"id","kind","scope","project","format","download_url","status","created_at"`, `"id":`+strSchema, `"kind":`+strSchema,
		`"scope":`+strSchema, `"project":`+strSchema, `"table":{"type":["string","null"]}`, `"format":`+strSchema, `"download_name":`+strSchema,
		`"download_url":`+strSchema, `"storage_backend":`+strSchema, `"content_type":`+strSchema, `"row_count":`+intSchema,
		`"table_count":{"type":["integer","null"]}`, `"size_bytes":`+intSchema, `"sha256":`+strSchema, `"status":`+strSchema,
		`"status_reason":{"type":["string","null"]}`, `"missing_at":{"type":["string","null"]}`, `"created_at":`+ref("Timestamp"), `"expires_at":`+ref("Timestamp")),
	"Change": object(`"id","table","op","key","at"`, `"id":`+intSchema, `"table":`+strSchema, `"op":{"enum":["`+pd.ChangeInsert+`","`+pd.ChangeUpdate+`","`+pd.ChangeDelete+`","`+pd.ChangeSchema+`"]}`,
		`"key":`+anyValue, `"row":{"type":["object","null"]}`, `"at":`+ref("Timestamp")),
	"BulkResult": object(`"table","affected_rows"`, `"table":`+strSchema, `"affected_rows":`+intSchema),
	"Meta":       object(`"generated_at"`, `"generated_at":`+ref("Timestamp")),
	"Envelope":   envelopeComponent,
}

// envelopeSchema is the answer of every JSON route with data as its data,
// or, for an error answer, the error with one of codes.
func envelopeSchema(data string, errCodes []pd.Code) string {
	if errCodes == nil {
		return `{"allOf":[` + ref("Envelope") + `],"properties":{"ok":{"const":true},"data":` + data + `,"error":{"type":"null"}}}`
	}
	enum, _ := json.Marshal(errCodes)
	return `{"allOf":[` + ref("Envelope") + `],"properties":{"ok":{"const":false},"data":{"type":"null"},"error":{"required":["code","message"],"properties":{"code":{"enum":` + string(enum) + `}}}}}`
}

// envelopeComponent is the envelope every JSON answer shares.
const envelopeComponent = `{"type":"object","additionalProperties":false,"required":["ok","data","error","request_id","meta"],"properties":{` +
	`"ok":{"type":"boolean"},"data":{},"error":{"type":["object","null"],"additionalProperties":false,"properties":{"code":{"type":"string"},"message":{"type":"string"}}},` +
	`"request_id":{"type":"string"},"operation_key":{"type":"string"},"operation_run_id":{"type":"string"},` +
	`"operation_grouping_status":{"type":"string"},"meta":{"$ref":"#/components/schemas/Meta"}}}`

// openAPIDocument builds the OpenAPI 3.1 document of apiRoutes.
func openAPIDocument() []byte {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	jsonContent := func(schema string) map[string]any {
		return map[string]any{"application/json": map[string]any{"schema": raw(schema)}}
	}
	retryAfter := map[string]any{"Retry-After": map[string]any{"description": "Seconds to wait before retrying.", "schema": raw(intSchema)}}
	// errorResponses groups codes by their status (statusOf).
	errorResponses := func(responses map[string]any, errCodes []pd.Code) {
		byStatus := map[int][]pd.Code{}
		for _, c := range errCodes {
			if !slices.Contains(byStatus[statusOf[c]], c) {
				byStatus[statusOf[c]] = append(byStatus[statusOf[c]], c)
			}
		}
		for _, status := range slices.Sorted(maps.Keys(byStatus)) {
			cs := byStatus[status]
			slices.Sort(cs)
			resp := map[string]any{"description": strings.Join(codeStrings(cs), ", "), "content": jsonContent(envelopeSchema("", cs))}
			if status == http.StatusServiceUnavailable {
				resp["headers"] = retryAfter
			}
			responses[itoaStatus(status)] = resp
		}
	}
	paths := map[string]map[string]any{}
	for _, rt := range apiRoutes {
		var params []any
		for _, name := range pathParams(rt.path) {
			params = append(params, map[string]any{"name": name, "in": "path", "required": true, "schema": raw(strSchema)})
		}
		for _, q := range rt.query {
			params = append(params, map[string]any{"name": q.name, "in": "query", "description": q.doc, "schema": raw(q.schema)})
		}
		for _, name := range []string{"OperationKey", "OperationRunID", "IdempotencyKey"} {
			params = append(params, map[string]any{"$ref": "#/components/parameters/" + name})
		}
		if rt.path == "/projects/{project}/changes/stream" {
			params = append(params, map[string]any{"name": "Last-Event-ID", "in": "header", "description": "Resume after this change id.", "schema": raw(strSchema)})
		}
		ok := map[string]any{"description": rt.summary}
		if rt.data != "" {
			ok["content"] = jsonContent(envelopeSchema(rt.data, nil))
		} else {
			ok["content"] = map[string]any{rt.media: map[string]any{"schema": raw(strSchema)}}
		}
		responses := map[string]any{itoaStatus(rt.status): ok}
		if rt.ranges {
			responses["206"] = map[string]any{"description": "The ranges asked for (Range, If-Range)", "content": ok["content"]}
			responses["304"] = map[string]any{"description": "Not modified (If-None-Match, If-Modified-Since)"}
			responses["412"] = map[string]any{"description": "Precondition failed (If-Match, If-Unmodified-Since)"}
		}
		errCodes := codes(projectCodes, rt.codes)
		if rt.body != "" {
			errCodes = codes(errCodes, bodyCodes)
		}
		if rt.write {
			errCodes = codes(errCodes, writeCodes)
		}
		errorResponses(responses, errCodes)
		op := map[string]any{
			"operationId": operationID(rt), "summary": rt.summary, "parameters": params, "responses": responses,
			"x-error-codes": codeStrings(errCodes),
		}
		if rt.body != "" {
			op["requestBody"] = map[string]any{"required": !rt.optionalBody, "content": jsonContent(rt.body)}
		}
		if paths[rt.path] == nil {
			paths[rt.path] = map[string]any{}
		}
		paths[rt.path][strings.ToLower(rt.method)] = op
	}
	health := map[string]any{"200": map[string]any{"description": "The server is serving", "content": jsonContent(envelopeSchema(object(`"status"`, `"status":{"const":"ok"}`), nil))}}
	errorResponses(health, []pd.Code{pd.ErrStoreClosed})
	paths[healthRoute] = map[string]any{"get": map[string]any{"operationId": "healthz", "summary": "Health check (no token)", "security": []any{}, "responses": health}}
	paths[metricsRoute] = map[string]any{"get": map[string]any{"operationId": "metrics", "summary": "Prometheus metrics (no token; when the server enables them)", "security": []any{},
		"responses": map[string]any{"200": map[string]any{"description": "Prometheus text format", "content": map[string]any{"text/plain": map[string]any{"schema": raw(strSchema)}}}}}}
	paths[openAPIRoute] = map[string]any{"get": map[string]any{"operationId": "openapi", "summary": "This document (no token)", "security": []any{},
		"responses": map[string]any{"200": map[string]any{"description": "OpenAPI 3.1 document", "content": jsonContent(`{"type":"object"}`)}}}}

	schemas := map[string]json.RawMessage{}
	for name, s := range apiSchemas {
		schemas[name] = raw(s)
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{"title": "projectdata", "version": "1",
			"description": "Project-scoped tables on SQLite. Every JSON answer is an envelope {ok, data, error, request_id, meta}; an error's code says what went wrong (x-error-codes lists a route's codes). A query parameter a route does not list, or one given twice, is refused (400 invalid_request). Every GET route also answers HEAD: the same status and headers, without the body."},
		"paths": paths,
		"components": map[string]any{
			"schemas": schemas,
			"parameters": map[string]any{
				"OperationKey":   map[string]any{"name": "X-Operation-Key", "in": "header", "description": "Groups requests of one operation.", "schema": raw(strSchema)},
				"OperationRunID": map[string]any{"name": "X-Operation-Run-Id", "in": "header", "description": "Run id of the operation (oprun_…).", "schema": raw(strSchema)},
				"IdempotencyKey": map[string]any{"name": "Idempotency-Key", "in": "header", "description": "On writes, a retry with the same key and request gets the first answer. Keys that grow with time (UUIDv7, ULID) cost the server less to store than random ones (UUIDv4).", "schema": raw(strSchema)},
			},
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer", "description": "A project token (pat_…)."}},
		},
		"security": []any{map[string]any{"bearer": []any{}}},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic("openapi: " + err.Error()) // the schemas above are constants
	}
	return append(b, '\n')
}

// openAPIJSON is the document served at GET /openapi.json.
var openAPIJSON = openAPIDocument()

// serveOpenAPI answers GET /openapi.json.
func (h *Handler) serveOpenAPI(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) {
	noteRoute(w, openAPIRoute)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Write(openAPIJSON)
}

// queryParams returns the names of the query parameters of the route
// method path (in httprouter's form), as apiRoutes documents them: the
// Handler refuses any other. A route apiRoutes does not have is a
// programming error.
func queryParams(method, path string) []string {
	for _, rt := range apiRoutes {
		if rt.method == method && routerPath(rt.path) == path {
			names := make([]string, len(rt.query))
			for i, q := range rt.query {
				names[i] = q.name
			}
			return names
		}
	}
	panic("httpapi: route " + method + " " + path + " is not in apiRoutes")
}

// pathParams returns the {names} of an OpenAPI path.
func pathParams(path string) []string {
	var names []string
	for seg := range strings.SplitSeq(path, "/") {
		if strings.HasPrefix(seg, "{") {
			names = append(names, strings.Trim(seg, "{}"))
		}
	}
	return names
}

// routerPath is an OpenAPI path in httprouter's form (/projects/:project).
func routerPath(path string) string {
	segs := strings.Split(path, "/")
	for i, seg := range segs {
		if strings.HasPrefix(seg, "{") {
			segs[i] = ":" + strings.Trim(seg, "{}")
		}
	}
	return strings.Join(segs, "/")
}

func operationID(rt apiRoute) string {
	return strings.ToLower(rt.method) + strings.NewReplacer("/projects/{project}", "", "/", "_", "{", "", "}", "", "-", "_").Replace(rt.path)
}

func codeStrings(cs []pd.Code) []string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = string(c)
	}
	return s
}

func itoaStatus(status int) string {
	b, _ := json.Marshal(status)
	return string(b)
}
