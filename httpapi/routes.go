package httpapi

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	pd "github.com/projectdata/projectdata"
)

// routes registers every route of a project's API (operationsRoutes adds
// /healthz and /metrics).
func (h *Handler) routes() {
	const p = "/projects/:project"
	h.handle(http.MethodGet, p, pd.OpGetProject, h.getProject)
	h.handle(http.MethodPatch, p, pd.OpRenameProject, h.renameProject)

	h.handle(http.MethodPost, p+"/auth/tokens", pd.OpCreateToken, h.createToken)
	h.handleStream(http.MethodGet, p+"/auth/tokens", pd.OpListTokens, h.listTokens)
	h.handle(http.MethodDelete, p+"/auth/tokens/:token_id", pd.OpRevokeToken, h.revokeToken)

	h.handle(http.MethodGet, p+"/table", pd.OpListTables, h.listTables)
	h.handle(http.MethodPost, p+"/table", pd.OpCreateTable, h.createTable)
	h.handle(http.MethodPatch, p+"/table/:table", pd.OpUpdateTable, h.updateTable)
	h.handle(http.MethodDelete, p+"/table/:table", pd.OpDeleteTable, h.deleteTable)

	h.handle(http.MethodGet, p+"/column/:table", pd.OpListColumns, h.listColumns)
	h.handle(http.MethodGet, p+"/column/:table/:column", pd.OpGetColumn, h.getColumn)
	h.handle(http.MethodPost, p+"/column/:table", pd.OpAddColumn, h.addColumn)
	h.handle(http.MethodPatch, p+"/column/:table/:column", pd.OpUpdateColumn, h.updateColumn)

	h.handle(http.MethodPost, p+"/records/:table", pd.OpInsertRecords, h.insertRecords)
	h.handle(http.MethodGet, p+"/records/:table", pd.OpListRecords, h.listRecords)
	h.handle(http.MethodGet, p+"/records/:table/:id", pd.OpGetRecord, h.getRecord)
	h.handle(http.MethodDelete, p+"/records/:table/:id", pd.OpDeleteRecord, h.deleteRecord)
	h.handle(http.MethodPatch, p+"/records/:table/:id", pd.OpUpdateRecord, h.updateRecord)
	h.handle(http.MethodPatch, p+"/records/:table", pd.OpUpdateRecords, h.updateRecords)
	h.handle(http.MethodDelete, p+"/records/:table", pd.OpDeleteRecords, h.deleteRecords)

	h.handle(http.MethodPost, p+"/query", pd.OpQuery, h.query)

	h.handle(http.MethodGet, p+"/indexes/:table", pd.OpListIndexes, h.listIndexes)
	h.handle(http.MethodPost, p+"/indexes/:table", pd.OpCreateIndex, h.createIndex)
	h.handle(http.MethodDelete, p+"/indexes/:table/:index", pd.OpDropIndex, h.dropIndex)

	h.handle(http.MethodGet, p+"/exports", pd.OpListExports, h.listExports)
	h.handle(http.MethodPost, p+"/exports", pd.OpCreateExport, h.createExport)
	h.handle(http.MethodDelete, p+"/exports/not-found", pd.OpDeleteNotFoundExports, h.deleteNotFoundExports)
	h.handleStream(http.MethodGet, p+"/export/download/:export", pd.OpDownloadExport, h.downloadExport)

	h.handle(http.MethodGet, p+"/changes", pd.OpListChanges, h.listChanges)
	h.handleStream(http.MethodGet, p+"/changes/stream", pd.OpListChanges, h.streamChanges)
}

func (h *Handler) getProject(ctx context.Context, r *http.Request, ps httprouter.Params) (int, any, error) {
	proj, n, err := h.store.GetProject(ctx, ps.ByName("project"))
	return http.StatusOK, map[string]any{"project": proj, "table_count": n}, err
}

func (h *Handler) renameProject(ctx context.Context, r *http.Request, ps httprouter.Params) (int, any, error) {
	var body struct {
		ProjectName any `json:"project_name"` // a string; anything else is invalid_project_name
	}
	if _, err := h.decodeBody(r, &body); err != nil {
		return 0, nil, err
	}
	name, ok := body.ProjectName.(string)
	if !ok {
		return 0, nil, errorf(pd.ErrInvalidProjectName, "project_name is required: a non-empty string")
	}
	proj, err := h.store.RenameProject(ctx, ps.ByName("project"), name)
	return http.StatusOK, map[string]any{"project": proj}, err
}

func (h *Handler) createToken(ctx context.Context, r *http.Request, ps httprouter.Params) (int, any, error) {
	var body struct {
		TokenName string  `json:"token_name"`
		TokenType any     `json:"token_type"` // absent or null: the default
		Role      pd.Role `json:"role"`
		ExpiresAt any     `json:"expires_at"` // absent or null: never expires
	}
	if _, err := h.decodeBody(r, &body); err != nil {
		return 0, nil, err
	}
	req := pd.NewToken{Name: body.TokenName, Role: body.Role}
	if body.TokenType != nil {
		// Sent, it must be the type: the Store reads an empty Type as
		// the default, which a sent "" is not.
		if typ, _ := body.TokenType.(string); typ != pd.TokenType {
			return 0, nil, errorf(pd.ErrInvalidTokenType, "token_type must be %q", pd.TokenType)
		}
		req.Type = pd.TokenType
	}
	if body.ExpiresAt != nil {
		// Sent, it must be a timestamp string; any other value is
		// invalid_expires_at (CONTRACT §7), which the decoder's type
		// error for a *string field, invalid_request, was not.
		s, ok := body.ExpiresAt.(string)
		if !ok {
			return 0, nil, errorf(pd.ErrInvalidExpiresAt, "expires_at must be null or an RFC 3339 timestamp string such as \"2027-01-01T00:00:00Z\"")
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return 0, nil, errorf(pd.ErrInvalidExpiresAt, "expires_at must be an RFC 3339 timestamp such as 2027-01-01T00:00:00Z")
		}
		req.ExpiresAt = &t
	}
	tok, err := h.store.CreateToken(ctx, ps.ByName("project"), req)
	return http.StatusCreated, map[string]any{"token": tok}, err
}

// listTokens answers every token of the project ({"tokens": [...]}, the
// route takes no parameters), written as the Store reads them a page at a
// time: tokens are never deleted, so there may be many, and the answer
// takes one chunk of memory (see dataStream) whatever their number.
func (h *Handler) listTokens(ctx context.Context, w http.ResponseWriter, r *http.Request, ps httprouter.Params, x *exchange) error {
	out := h.streamData(w, x)
	defer out.close()
	out.buf.WriteString(`{"tokens":[`)
	first := true
	for tok, err := range h.store.Tokens(ctx, ps.ByName("project")) {
		if err != nil {
			return out.fail(r, err)
		}
		if !first {
			out.buf.WriteByte(',')
		}
		first = false
		if err := appendJSON(out.buf, tok); err != nil {
			return out.fail(r, err)
		}
		if !out.flush(false) {
			return nil // the client is gone
		}
	}
	out.buf.WriteString(`]}`)
	return out.fail(r, out.end())
}

func (h *Handler) revokeToken(ctx context.Context, r *http.Request, ps httprouter.Params) (int, any, error) {
	id, err := strconv.ParseInt(ps.ByName("token_id"), 10, 64)
	if err != nil {
		return 0, nil, errorf(pd.ErrTokenNotFound, "token %.40q does not exist", ps.ByName("token_id"))
	}
	tok, err := h.store.RevokeToken(ctx, ps.ByName("project"), id)
	return http.StatusOK, map[string]any{"token": tok}, err
}

func (h *Handler) listTables(ctx context.Context, r *http.Request, ps httprouter.Params) (int, any, error) {
	tables, err := h.store.ListTables(ctx, ps.ByName("project"))
	return http.StatusOK, map[string]any{"tables": tables}, err
}

// columnBody is a column as clients send it: the add-column body, plus
// is_primary when creating a table.
type columnBody struct {
	ColumnName   string        `json:"column_name"`
	ColumnType   pd.ColumnType `json:"column_type"`
	IsNullable   *bool         `json:"is_nullable"`
	DefaultValue any           `json:"default_value"`
	IsUnique     bool          `json:"is_unique"`
	IsPrimary    bool          `json:"is_primary"`
}

func (c columnBody) def() pd.ColumnDef {
	return pd.ColumnDef{
		Name:    c.ColumnName,
		Type:    c.ColumnType,
		Primary: c.IsPrimary,
		NotNull: c.IsNullable != nil && !*c.IsNullable,
		Unique:  c.IsUnique,
		Default: c.DefaultValue,
	}
}

func (h *Handler) createTable(ctx context.Context, r *http.Request, ps httprouter.Params) (int, any, error) {
	var body struct {
		TableName   string       `json:"table_name"`
		DisplayName *string      `json:"display_name"`
		Columns     []columnBody `json:"columns"`
	}
	if _, err := h.decodeBody(r, &body); err != nil {
		return 0, nil, err
	}
	def := pd.TableDef{Name: body.TableName, DisplayName: body.DisplayName}
	for _, c := range body.Columns {
		def.Columns = append(def.Columns, c.def())
	}
	table, cols, err := h.store.CreateTable(ctx, ps.ByName("project"), def)
	return http.StatusCreated, map[string]any{"table": table, "columns": cols}, err
}

func (h *Handler) updateTable(ctx context.Context, r *http.Request, ps httprouter.Params) (int, any, error) {
	var upd pd.TableUpdate
	if _, err := h.decodeBody(r, &upd); err != nil {
		return 0, nil, err
	}
	table, err := h.store.UpdateTable(ctx, ps.ByName("project"), ps.ByName("table"), upd)
	return http.StatusOK, map[string]any{"table": table}, err
}

func (h *Handler) deleteTable(ctx context.Context, r *http.Request, ps httprouter.Params) (int, any, error) {
	name, err := h.store.DeleteTable(ctx, ps.ByName("project"), ps.ByName("table"))
	return http.StatusOK, map[string]any{"deleted": true, "table_name": name}, err
}

func (h *Handler) listColumns(ctx context.Context, r *http.Request, ps httprouter.Params) (int, any, error) {
	table, cols, err := h.store.ListColumns(ctx, ps.ByName("project"), ps.ByName("table"))
	return http.StatusOK, map[string]any{"table": table, "columns": cols}, err
}

func (h *Handler) getColumn(ctx context.Context, r *http.Request, ps httprouter.Params) (int, any, error) {
	col, err := h.store.GetColumn(ctx, ps.ByName("project"), ps.ByName("table"), ps.ByName("column"))
	return http.StatusOK, map[string]any{"table": col.TableName, "column": col}, err
}

func (h *Handler) query(ctx context.Context, r *http.Request, ps httprouter.Params) (int, any, error) {
	var req pd.QueryRequest
	if _, err := h.decodeBody(r, &req); err != nil {
		return 0, nil, err
	}
	// The result's JSON is read straight from SQLite's columns (the bytes
	// encoding/json would write for Query's QueryResult).
	buf := h.getBody()
	res, err := h.store.AppendQueryJSON(ctx, buf.AvailableBuffer(), ps.ByName("project"), req)
	buf.Write(res)
	return http.StatusOK, buf, err
}

func (h *Handler) addColumn(ctx context.Context, r *http.Request, ps httprouter.Params) (int, any, error) {
	var body columnBody
	if _, err := h.decodeBody(r, &body); err != nil {
		return 0, nil, err
	}
	col, err := h.store.AddColumn(ctx, ps.ByName("project"), ps.ByName("table"), body.def())
	return http.StatusCreated, map[string]any{"table": col.TableName, "column": col}, err
}

func (h *Handler) updateColumn(ctx context.Context, r *http.Request, ps httprouter.Params) (int, any, error) {
	var upd pd.ColumnUpdate
	if _, err := h.decodeBody(r, &upd); err != nil {
		return 0, nil, err
	}
	col, err := h.store.UpdateColumn(ctx, ps.ByName("project"), ps.ByName("table"), ps.ByName("column"), upd)
	return http.StatusOK, map[string]any{"table": col.TableName, "column": col}, err
}

func (h *Handler) insertRecords(ctx context.Context, r *http.Request, ps httprouter.Params) (int, any, error) {
	body, err := h.body(r)
	if err != nil {
		return 0, nil, err
	}
	res, err := h.store.InsertJSON(ctx, ps.ByName("project"), ps.ByName("table"), body)
	if err != nil {
		return 0, nil, err
	}
	// The same bytes as encoding/json's, without its reflection.
	buf := h.getBody()
	data, err := res.AppendJSON(buf.AvailableBuffer())
	buf.Write(data)
	return http.StatusCreated, buf, err
}

func (h *Handler) listRecords(ctx context.Context, r *http.Request, ps httprouter.Params) (int, any, error) {
	q := r.URL.Query()
	opts := pd.ListOptions{Order: q.Get("order"), After: pd.Cursor(q.Get("after")), Count: pd.CountMode(q.Get("count"))}
	if err := queryPage(q, &opts.Limit, &opts.Offset); err != nil {
		return 0, nil, err
	}
	if q.Get("offset") != "" && opts.After != "" {
		// Sent with after, even as 0 (the Store's zero Offset is none).
		return 0, nil, errorf(pd.ErrInvalidRequest, "offset cannot be combined with after: a cursor already says where the page starts")
	}
	if q.Has("columns") {
		opts.Columns = splitList(q.Get("columns"))
	}
	if v := q.Get("where"); v != "" {
		if _, err := pd.DecodeJSON(strings.NewReader(v), &opts.Where); err != nil {
			if pd.ErrorCode(err) == pd.ErrInvalidJSON {
				err = errorf(pd.ErrInvalidWhere, "where must be URL-encoded JSON: an object or an array of conditions")
			}
			return 0, nil, err
		}
	}
	// The page's JSON is read straight from SQLite's columns (the bytes
	// encoding/json would write for ListRecords' RecordList).
	buf := h.getBody()
	page, err := h.store.AppendRecordListJSON(ctx, buf.AvailableBuffer(), ps.ByName("project"), ps.ByName("table"), opts)
	buf.Write(page)
	return http.StatusOK, buf, err
}

// splitList splits a comma-separated query parameter (columns, tables)
// into its names, without the spaces around them, as order's are read.
func splitList(v string) []string {
	names := strings.Split(v, ",")
	for i, n := range names {
		names[i] = strings.TrimSpace(n)
	}
	return names
}

// knownParams refuses a query parameter that is not one of names, or one
// given more than once.
func knownParams(q url.Values, names ...string) error {
	var unknown, repeated []string
	for name, values := range q {
		switch {
		case !slices.Contains(names, name):
			unknown = append(unknown, name)
		case len(values) > 1:
			repeated = append(repeated, name)
		}
	}
	if len(repeated) > 0 && len(unknown) == 0 {
		// Which of the values a proxy or a cache in front took for the
		// parameter, nobody can tell: none is.
		slices.Sort(repeated)
		return errorf(pd.ErrInvalidRequest, "query parameter %q is given %d times; give it once", repeated[0], len(q[repeated[0]]))
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		if len(names) == 0 {
			return errorf(pd.ErrInvalidRequest, "unknown query parameter %.40q (this route takes none)", unknown[0])
		}
		return errorf(pd.ErrInvalidRequest, "unknown query parameter %.40q (known: %s)", unknown[0], strings.Join(names, ", "))
	}
	return nil
}

// queryPage parses the limit and offset query parameters that are
// present; an empty one (limit=) is absent. The Store reads a zero limit
// as "the default"; over HTTP an explicit limit below 1 is a limit,
// clamped to 1.
func queryPage(q url.Values, limit, offset *int) error {
	for name, dst := range map[string]*int{"limit": limit, "offset": offset} {
		if v := q.Get(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil && !errors.Is(err, strconv.ErrRange) { // out of range: n is the nearest int
				return errorf(pd.ErrInvalidRequest, "%s must be an integer", name)
			}
			*dst = n
			if name == "limit" {
				*dst = max(n, 1)
			}
		}
	}
	return nil
}

func (h *Handler) getRecord(ctx context.Context, r *http.Request, ps httprouter.Params) (int, any, error) {
	// The record's JSON is read straight from SQLite's columns (the bytes
	// encoding/json would write for FindRecord's record).
	buf := h.getBody()
	rec, err := h.store.AppendRecordJSON(ctx, buf.AvailableBuffer(), ps.ByName("project"), ps.ByName("table"), ps.ByName("id"))
	buf.Write(rec)
	return http.StatusOK, buf, err
}

func (h *Handler) updateRecord(ctx context.Context, r *http.Request, ps httprouter.Params) (int, any, error) {
	var data pd.Row
	if _, err := h.decodeBody(r, &data); err != nil {
		return 0, nil, err
	}
	rec, err := h.store.UpdateFoundRecord(ctx, ps.ByName("project"), ps.ByName("table"), ps.ByName("id"), data)
	return http.StatusOK, rec, err
}

func (h *Handler) deleteRecord(ctx context.Context, r *http.Request, ps httprouter.Params) (int, any, error) {
	res, err := h.store.DeleteRecord(ctx, ps.ByName("project"), ps.ByName("table"), ps.ByName("id"))
	return http.StatusOK, res, err
}

func (h *Handler) updateRecords(ctx context.Context, r *http.Request, ps httprouter.Params) (int, any, error) {
	var upd pd.BulkUpdate
	if _, err := h.decodeBody(r, &upd); err != nil {
		return 0, nil, err
	}
	res, err := h.store.UpdateRecords(ctx, ps.ByName("project"), ps.ByName("table"), upd)
	return http.StatusOK, res, err
}

func (h *Handler) deleteRecords(ctx context.Context, r *http.Request, ps httprouter.Params) (int, any, error) {
	var del pd.BulkDelete
	if _, err := h.decodeBody(r, &del); err != nil {
		return 0, nil, err
	}
	res, err := h.store.DeleteRecords(ctx, ps.ByName("project"), ps.ByName("table"), del)
	return http.StatusOK, res, err
}

func (h *Handler) listIndexes(ctx context.Context, r *http.Request, ps httprouter.Params) (int, any, error) {
	table, idx, err := h.store.ListIndexes(ctx, ps.ByName("project"), ps.ByName("table"))
	return http.StatusOK, map[string]any{"table": table, "indexes": idx}, err
}

func (h *Handler) createIndex(ctx context.Context, r *http.Request, ps httprouter.Params) (int, any, error) {
	var req pd.IndexRequest
	if _, err := h.decodeBody(r, &req); err != nil {
		return 0, nil, err
	}
	idx, err := h.store.CreateIndex(ctx, ps.ByName("project"), ps.ByName("table"), req)
	return http.StatusCreated, map[string]any{"index": idx}, err
}

func (h *Handler) dropIndex(ctx context.Context, r *http.Request, ps httprouter.Params) (int, any, error) {
	name, err := h.store.DropIndex(ctx, ps.ByName("project"), ps.ByName("table"), ps.ByName("index"))
	return http.StatusOK, map[string]any{"deleted": true, "index_name": name}, err
}

func (h *Handler) listExports(ctx context.Context, r *http.Request, ps httprouter.Params) (int, any, error) {
	q := r.URL.Query()
	eq := pd.ExportQuery{Status: q.Get("status")}
	if q.Has("status") && eq.Status == "" {
		return 0, nil, errorf(pd.ErrInvalidExportStatus, "status must be ready, not_found or all")
	}
	if err := queryPage(q, &eq.Limit, &eq.Offset); err != nil {
		return 0, nil, err
	}
	page, err := h.store.ListExports(ctx, ps.ByName("project"), eq)
	for i := range page.Exports {
		page.Exports[i].DownloadURL = h.link(r, page.Exports[i].DownloadURL)
	}
	return http.StatusOK, page, err
}

func (h *Handler) createExport(ctx context.Context, r *http.Request, ps httprouter.Params) (int, any, error) {
	var body struct {
		Kind   string `json:"kind"`
		Table  string `json:"table"`
		Format string `json:"format"`
	}
	if _, err := h.decodeBody(r, &body); err != nil {
		return 0, nil, err
	}
	var (
		exp pd.Export
		err error
	)
	switch body.Kind {
	case "", pd.ExportKindTable:
		exp, err = h.store.CreateExport(ctx, ps.ByName("project"), body.Table, body.Format)
	case pd.ExportKindProject: // a snapshot of the whole database; the Store requires admin
		switch {
		case body.Table != "":
			err = errorf(pd.ErrInvalidRequest, "a project export takes no table: it holds every table")
		case body.Format != "" && !strings.EqualFold(body.Format, "sqlite"):
			err = errorf(pd.ErrInvalidExportFormat, "a project export's format is sqlite, not %.40q", body.Format)
		default:
			exp, err = h.store.CreateProjectExport(ctx, ps.ByName("project"))
		}
	default:
		err = errorf(pd.ErrInvalidRequest, "kind must be %s or %s", pd.ExportKindTable, pd.ExportKindProject)
	}
	exp.DownloadURL = h.link(r, exp.DownloadURL)
	return http.StatusCreated, map[string]any{"export": exp}, err
}

func (h *Handler) deleteNotFoundExports(ctx context.Context, r *http.Request, ps httprouter.Params) (int, any, error) {
	n, err := h.store.DeleteNotFoundExports(ctx, ps.ByName("project"))
	return http.StatusOK, map[string]any{
		"deleted_count": n,
		"project":       ps.ByName("project"),
		"scope":         "project",
		"status":        pd.ExportStatusNotFound,
	}, err
}

// downloadExport streams the export's file itself, not an envelope: its
// manifest gives the type, name and length, and its sha256 is the ETag.
func (h *Handler) downloadExport(ctx context.Context, w http.ResponseWriter, r *http.Request, ps httprouter.Params, _ *exchange) error {
	exp, f, err := h.store.OpenExport(ctx, ps.ByName("project"), ps.ByName("export"))
	if err != nil {
		return err
	}
	defer f.Close()
	end, err := h.downloads.start(ctx, h.opts.MaxDownloadsPerToken)
	if err != nil {
		return err
	}
	defer end()
	w.Header().Set("Content-Type", exp.ContentType)
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": exp.DownloadName}))
	w.Header().Set("ETag", `"`+exp.SHA256+`"`)
	w.Header().Set("Cache-Control", "private, no-cache")
	// ServeContent sets Content-Length and answers conditional and range
	// requests against the ETag; it sees the Range header as
	// rangeForServeContent rewrites it, or none when that ignores it.
	if rh := r.Header.Get("Range"); rh != "" {
		r = r.Clone(r.Context())
		if rh = rangeForServeContent(rh, exp.SizeBytes); rh == "" {
			r.Header.Del("Range")
		} else {
			r.Header.Set("Range", rh)
		}
	}
	dw := &downloadWriter{ResponseWriter: w, writeDeadline: h.chunkDeadline(w)}
	http.ServeContent(dw, r, "", exp.CreatedAt.Time, f)
	if dw.refused {
		// ServeContent's own 416 is text: the envelope instead, with
		// its Content-Range.
		w.Header().Del("Content-Disposition")
		return errorf(pd.ErrRangeNotSatisfiable, "no range asked for selects any of the file's %d bytes", exp.SizeBytes)
	}
	return nil
}

// downloadChunk is how much of a file one write deadline covers.
const downloadChunk = 64 << 10

// downloadWriter is what http.ServeContent sends an export's file through.
// Each chunk of the file is written under its own deadline (see
// writeDeadline). A 416 answer's status and text body are held back, and
// refused set, for the handler to answer the envelope.
type downloadWriter struct {
	http.ResponseWriter
	writeDeadline
	refused bool
}

func (d *downloadWriter) WriteHeader(status int) {
	if status == http.StatusRequestedRangeNotSatisfiable {
		d.refused = true
		return
	}
	d.ResponseWriter.WriteHeader(status)
}

func (d *downloadWriter) Write(b []byte) (int, error) {
	if d.refused {
		return len(b), nil
	}
	d.extend()
	return d.ResponseWriter.Write(b)
}

// ReadFrom copies the file a chunk at a time, each under a new deadline.
func (d *downloadWriter) ReadFrom(r io.Reader) (n int64, err error) {
	if d.refused {
		return io.Copy(io.Discard, r)
	}
	for {
		d.extend()
		m, err := io.Copy(d.ResponseWriter, io.LimitReader(r, downloadChunk))
		n += m
		if err != nil || m < downloadChunk {
			return n, err
		}
	}
}

// writeDeadline gives each write of a long answer (an export's file, a
// long list of tokens) a deadline of its own, Options.StreamWriteTimeout,
// as a change stream's events have: the server's WriteTimeout, which
// bounds a whole answer, would cut a large one short however fast the
// client reads.
type writeDeadline struct {
	rc      *http.ResponseController
	timeout time.Duration
}

// chunkDeadline is the writeDeadline of an answer written to w.
func (h *Handler) chunkDeadline(w http.ResponseWriter) writeDeadline {
	return writeDeadline{rc: http.NewResponseController(w), timeout: h.opts.StreamWriteTimeout}
}

// extend sets the deadline of the next write; a writer without deadlines
// (http.ErrNotSupported) writes without one. net/http takes the deadline
// off the connection once the answer is sent.
func (d writeDeadline) extend() { _ = d.rc.SetWriteDeadline(time.Now().Add(d.timeout)) }

// Unwrap gives http.ResponseController the underlying writer.
func (d *downloadWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }
