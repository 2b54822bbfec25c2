package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"mime"
	"net/http"
	"net/url"
	"strconv"

	"github.com/pkg/errors"

	pd "github.com/projectdata/projectdata"
)

// CreateExport exports the table to a file in format ("csv").
func (c *Client) CreateExport(ctx context.Context, slug, table, format string) (pd.Export, error) {
	var out struct {
		Export pd.Export `json:"export"`
	}
	err := c.do(ctx, request{method: "POST", path: project(slug, "exports"), body: map[string]string{"table": table, "format": format}, idempotent: true}, &out)
	return out.Export, err
}

// CreateProjectExport takes a snapshot of the whole project database (a
// SQLite file; admin only), downloaded like any export.
func (c *Client) CreateProjectExport(ctx context.Context, slug string) (pd.Export, error) {
	var out struct {
		Export pd.Export `json:"export"`
	}
	err := c.do(ctx, request{method: "POST", path: project(slug, "exports"), body: map[string]string{"kind": pd.ExportKindProject}, idempotent: true}, &out)
	return out.Export, err
}

// ListExports lists the project's exports.
func (c *Client) ListExports(ctx context.Context, slug string, q pd.ExportQuery) (pd.ExportPage, error) {
	v := url.Values{}
	if q.Status != "" {
		v.Set("status", q.Status)
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Offset != 0 {
		v.Set("offset", strconv.Itoa(q.Offset))
	}
	var out pd.ExportPage
	err := c.do(ctx, request{method: "GET", path: project(slug, "exports"), query: v}, &out)
	return out, err
}

// DeleteNotFoundExports forgets the exports whose files are gone and
// returns how many.
func (c *Client) DeleteNotFoundExports(ctx context.Context, slug string) (int, error) {
	var out struct {
		DeletedCount int `json:"deleted_count"`
	}
	// The specification: a missing or unusable token may answer 404
	// without an envelope here.
	err := c.do(ctx, request{method: "DELETE", path: project(slug, "exports", "not-found"), idempotent: true, notFound: pd.ErrInvalidToken}, &out)
	return out.DeletedCount, err
}

// DownloadExport streams the export's file to w and returns the bytes
// written. (The Store's OpenExport returns the file itself; over HTTP the
// file streams to w.)
func (c *Client) DownloadExport(ctx context.Context, slug, id string, w io.Writer) (int64, error) {
	req := request{method: "GET", path: project(slug, "export", "download", seg(id)), stream: true, notFound: pd.ErrExportNotFound}
	res, data, err := c.send(ctx, req)
	if err != nil {
		return 0, err
	}
	if res.StatusCode != http.StatusOK {
		return 0, decodeEnvelope(res, data, req, nil)
	}
	defer closeBody(res.Body)
	n, err := io.Copy(w, res.Body)
	if err == nil && res.ContentLength >= 0 && n != res.ContentLength {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return n, errors.Wrapf(err, "projectdata client: download %s", id)
	}
	return n, nil
}

// change is a change as the API encodes it.
type change struct {
	ID    int64        `json:"id"`
	Table string       `json:"table"`
	Op    string       `json:"op"`
	Key   any          `json:"key"`
	Row   pd.Row       `json:"row"`
	At    pd.Timestamp `json:"at"`
}

func (ch change) change() pd.Change {
	plainRows([]pd.Row{ch.Row})
	return pd.Change{ID: ch.ID, Table: ch.Table, Op: ch.Op, Key: plain(ch.Key), Row: ch.Row, At: ch.At.Time}
}

// changeValues are the query parameters of q.
func changeValues(q pd.ChangeQuery) (url.Values, error) {
	v := url.Values{}
	v.Set("after", strconv.FormatInt(q.After, 10))
	if len(q.Tables) > 0 {
		tables, err := nameList(q.Tables, func(name string) error {
			return &pd.Error{Code: pd.ErrInvalidTableName, Message: fmt.Sprintf("table name %.80q must match ^[A-Za-z_][A-Za-z0-9_]{0,62}$", name)}
		})
		if err != nil {
			return nil, err
		}
		v.Set("tables", tables)
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return v, nil
}

// ListChanges returns one page of changes after q.After.
func (c *Client) ListChanges(ctx context.Context, slug string, q pd.ChangeQuery) (pd.ChangePage, error) {
	var out struct {
		Changes   []change `json:"changes"`
		NextAfter int64    `json:"next_after"`
	}
	query, err := changeValues(q)
	if err != nil {
		return pd.ChangePage{}, err
	}
	err = c.do(ctx, request{method: "GET", path: project(slug, "changes"), query: query}, &out)
	page := pd.ChangePage{NextAfter: out.NextAfter, Changes: make([]pd.Change, len(out.Changes))}
	for i, ch := range out.Changes {
		page.Changes[i] = ch.change()
	}
	return page, err
}

// FollowChanges yields the changes after q.After (of q.Tables, if given),
// then each new one as it is committed, from the server's event stream,
// until ctx is done, which ends the iteration without an error, as the
// Store's does. q.Limit is ignored. q.Following is called once the
// server's first stream opens, and q.Passed with each point past changes
// of other tables that the server's pings name, as the Store calls them.
//
// A stream that ends or fails (the server closes its streams on shutdown,
// a proxy or the network drops them) is opened again, with Last-Event-ID
// the last change yielded (or the later point, past changes of other
// tables, that the server's last ping named), so that each change is
// yielded once: after a wait that grows with the failures in a row, as
// long as Retry-After says on a 503, at most Options.MaxRetryWait. A 503
// server_busy is opened again so, whatever its reason: among them, the
// token holds every change stream of the project that the server allows
// one token, and the feed follows once one of them ends. An error that
// opening it again cannot mend ends the iteration, as the last pair: ErrChangesExpired
// (the resume point is older than the server keeps), ErrInvalidToken,
// ErrPermissionDenied, ErrProjectNotFound and the other answers to the
// request itself, ErrResponseTooLarge for a change longer than
// Options.MaxResponseBytes, a change that cannot be decoded, or a 200
// that is not an event stream (a proxy's page).
func (c *Client) FollowChanges(ctx context.Context, slug string, q pd.ChangeQuery) iter.Seq2[pd.Change, error] {
	return func(yield func(pd.Change, error) bool) {
		query, err := changeValues(pd.ChangeQuery{After: q.After, Tables: q.Tables})
		if err != nil {
			yield(pd.Change{}, err)
			return
		}
		req := request{method: "GET", path: project(slug, "changes", "stream"), query: query, stream: true, accept: "text/event-stream"}
		last := q.After // the id of the last change yielded
		for failures := 0; ; failures++ {
			res, data, err := c.send(ctx, req)
			retryAfter := ""
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				// The network: open it again.
			case res.StatusCode == http.StatusOK && !isEventStream(res.Header.Get("Content-Type")):
				// A proxy's page, say: opening it again would get it again.
				res.Body.Close()
				yield(pd.Change{}, errors.Errorf("projectdata client: GET %s: the server answered %s with %q, not an event stream", req.path, res.Status, res.Header.Get("Content-Type")))
				return
			case res.StatusCode == http.StatusOK:
				failures = 0
				if q.Following != nil { // the server's feed holds its place and checked After
					q.Following()
					q.Following = nil
				}
				stop := c.readEvents(res.Body, &last, q.Passed, yield) // or it ended, cleanly or not: open it again
				res.Body.Close()
				if stop || ctx.Err() != nil {
					return
				}
			default:
				err = decodeEnvelope(res, data, req, nil)
				if !reopens(err) {
					yield(pd.Change{}, err)
					return
				}
				retryAfter = res.Header.Get("Retry-After")
			}
			req.lastEventID = strconv.FormatInt(last, 10)
			if !c.pause(ctx, failures, retryAfter) {
				return
			}
		}
	}
}

// isEventStream reports whether contentType is text/event-stream.
func isEventStream(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "text/event-stream"
}

// reopens reports whether a change stream refused with err is opened
// again: the server failed or is busy, rather than answering the request.
func reopens(err error) bool {
	switch pd.ErrorCode(err) {
	case pd.ErrServerBusy, pd.ErrStoreClosed, pd.ErrInternal:
		return true
	}
	return false
}

// readEvents yields the changes of one event stream whose id is after
// *last, moving *last on, until the stream ends or fails. It returns true
// when the iteration is over: yield stopped it, or it yielded an error
// that opening the stream again cannot mend. An event's lines are read
// whole, whatever their length, within Options.MaxResponseBytes: the
// server writes a change as one line of JSON, HTML-escaped (a row of
// 3 MiB of < is an 18 MiB line).
func (c *Client) readEvents(body io.Reader, last *int64, passed func(int64), yield func(pd.Change, error) bool) (stop bool) {
	br := bufio.NewReaderSize(body, 64<<10)
	var event string
	var data []byte
	var id int64 // the event's id line, if any
	for {
		line, err := readLine(br, c.opts.MaxResponseBytes-int64(len(data)))
		switch {
		case errors.Is(err, ErrResponseTooLarge):
			yield(pd.Change{}, errors.Wrap(err, "projectdata client: a change event of the stream"))
			return true
		case err != nil:
			return false
		case len(line) == 0 && len(data) > 0 && event == "error": // the server's stream failed
			err := eventError(data)
			if reopens(err) {
				return false
			}
			yield(pd.Change{}, err)
			return true
		case len(line) == 0 && len(data) > 0: // the end of a change's event
			ch, err := decodeChange(data)
			if err != nil {
				yield(pd.Change{}, err)
				return true
			}
			if ch.ID > *last {
				*last = ch.ID
				if !yield(ch, nil) {
					return true
				}
			}
			event, data, id = "", data[:0], 0
		case len(line) == 0: // the end of a block without data
			// A ping's id: the server read past changes of other tables.
			// The stream resumes after it, and the caller hears of it.
			if id > *last {
				*last = id
				if passed != nil {
					passed(id)
				}
			}
			event, id = "", 0
		case line[0] == ':': // a comment (": ping")
		default:
			field, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(field) {
			case "event":
				event = string(value)
			case "id":
				id, _ = strconv.ParseInt(string(value), 10, 64)
			case "data":
				if len(data) > 0 {
					data = append(data, '\n')
				}
				data = append(data, value...)
			}
		}
	}
}

// readLine reads a line of an event stream, without its end (\n or
// \r\n), or fails with ErrResponseTooLarge past limit bytes. A line the
// stream's end cuts is an error (io.ErrUnexpectedEOF).
func readLine(br *bufio.Reader, limit int64) ([]byte, error) {
	var line []byte
	for {
		part, err := br.ReadSlice('\n')
		if int64(len(line)+len(part)) > limit+2 { // the line's end is not counted
			return nil, errors.Wrapf(ErrResponseTooLarge, "stopped after %d bytes", limit)
		}
		line = append(line, part...)
		switch {
		case err == bufio.ErrBufferFull:
		case err == io.EOF && len(line) > 0:
			return nil, io.ErrUnexpectedEOF
		case err != nil:
			return nil, err
		default:
			return bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r")), nil
		}
	}
}

// eventError is the error of an "error" event, which ends a stream.
func eventError(data []byte) error {
	var e errorBody
	if json.Unmarshal(data, &e) != nil || e.Code == "" {
		return &pd.Error{Code: pd.ErrInternal, Message: "the change stream ended with an error event without a code"}
	}
	return &pd.Error{Code: e.Code, Message: e.Message}
}

// decodeChange decodes the data of a change's event.
func decodeChange(data []byte) (pd.Change, error) {
	var ch change
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&ch); err != nil {
		return pd.Change{}, errors.Wrap(err, "projectdata client: decode a change")
	}
	return ch.change(), nil
}

// LastChangeID returns the id of the project's newest change, 0 for an
// empty log: following the log after it gives the changes from now on. A
// follower told ErrChangesExpired reads the data afresh and follows from
// here, having asked before it read.
//
// No route answers it alone: a change stream opened without a resume
// point starts from now, with a block that names where (CONTRACT §12
// leaves the stream's start to the server; this one names it first). The
// client opens such a stream, reads that block and closes the stream. The
// stream counts among the token's while it is open (see FollowChanges).
func (c *Client) LastChangeID(ctx context.Context, slug string) (int64, error) {
	req := request{method: "GET", path: project(slug, "changes", "stream"), stream: true, accept: "text/event-stream"}
	res, data, err := c.send(ctx, req)
	if err != nil {
		return 0, err
	}
	if res.StatusCode != http.StatusOK {
		return 0, decodeEnvelope(res, data, req, nil)
	}
	defer res.Body.Close() // not drained: the stream does not end
	br := bufio.NewReaderSize(res.Body, 512)
	for {
		line, err := readLine(br, 512)
		if err != nil {
			return 0, errors.Wrap(err, "projectdata client: the change stream's start")
		}
		if v, ok := bytes.CutPrefix(line, []byte("id:")); ok {
			id, err := strconv.ParseInt(string(bytes.TrimPrefix(v, []byte(" "))), 10, 64)
			if err != nil || id < 0 {
				return 0, &pd.Error{Code: pd.ErrInternal, Message: fmt.Sprintf("the change stream started at %.40q, not a change id", v)}
			}
			return id, nil
		}
		if len(line) == 0 {
			return 0, &pd.Error{Code: pd.ErrInternal, Message: "the change stream did not name its start"}
		}
	}
}

// Changes yields every change after the id after, then follows new ones,
// like FollowChanges of every table.
func (c *Client) Changes(ctx context.Context, slug string, after int64) iter.Seq2[pd.Change, error] {
	return c.FollowChanges(ctx, slug, pd.ChangeQuery{After: after})
}
