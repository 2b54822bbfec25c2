package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"

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
		return n, fmt.Errorf("projectdata client: download %s: %w", id, err)
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

func changeValues(q pd.ChangeQuery, after bool) url.Values {
	v := url.Values{}
	if after {
		v.Set("after", strconv.FormatInt(q.After, 10))
	}
	if len(q.Tables) > 0 {
		v.Set("tables", strings.Join(q.Tables, ","))
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return v
}

// ListChanges returns one page of changes after q.After.
func (c *Client) ListChanges(ctx context.Context, slug string, q pd.ChangeQuery) (pd.ChangePage, error) {
	var out struct {
		Changes   []change `json:"changes"`
		NextAfter int64    `json:"next_after"`
	}
	err := c.do(ctx, request{method: "GET", path: project(slug, "changes"), query: changeValues(q, true)}, &out)
	page := pd.ChangePage{NextAfter: out.NextAfter, Changes: make([]pd.Change, len(out.Changes))}
	for i, ch := range out.Changes {
		page.Changes[i] = ch.change()
	}
	return page, err
}

// FollowChanges yields the changes after q.After, then each new one as it
// is committed, from the server's event stream, until ctx is done (which
// ends the iteration without an error) or the stream fails (the error is
// yielded last).
func (c *Client) FollowChanges(ctx context.Context, slug string, q pd.ChangeQuery) iter.Seq2[pd.Change, error] {
	return func(yield func(pd.Change, error) bool) {
		req := request{method: "GET", path: project(slug, "changes", "stream"), query: changeValues(q, true), stream: true, accept: "text/event-stream"}
		res, answer, err := c.send(ctx, req)
		if err != nil {
			if ctx.Err() == nil {
				yield(pd.Change{}, err)
			}
			return
		}
		if res.StatusCode != http.StatusOK {
			yield(pd.Change{}, decodeEnvelope(res, answer, req, nil))
			return
		}
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		var event, data string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event:"):
				event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
			case strings.HasPrefix(line, "data:"):
				data += strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")
			case line == "" && data != "":
				if !c.yieldEvent(event, data, yield) {
					return
				}
				event, data = "", ""
			}
		}
		if ctx.Err() != nil {
			return
		}
		err = sc.Err()
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		yield(pd.Change{}, fmt.Errorf("projectdata client: change stream of %s ended: %w", slug, err))
	}
}

// yieldEvent yields one event of the change stream; an "error" event is
// yielded as the error it carries, and ends the stream.
func (c *Client) yieldEvent(event, data string, yield func(pd.Change, error) bool) bool {
	if event == "error" {
		var e struct {
			Code    pd.Code `json:"code"`
			Message string  `json:"message"`
		}
		json.Unmarshal([]byte(data), &e)
		if e.Code == "" {
			e.Code = pd.ErrInternal
		}
		yield(pd.Change{}, &pd.Error{Code: e.Code, Message: e.Message})
		return false
	}
	var ch change
	d := json.NewDecoder(strings.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&ch); err != nil {
		yield(pd.Change{}, &pd.Error{Code: pd.ErrInternal, Message: "decode a change: " + err.Error()})
		return false
	}
	return yield(ch.change(), nil)
}

// Changes yields every change after the id after, then follows new ones,
// like FollowChanges of every table.
func (c *Client) Changes(ctx context.Context, slug string, after int64) iter.Seq2[pd.Change, error] {
	return c.FollowChanges(ctx, slug, pd.ChangeQuery{After: after})
}
