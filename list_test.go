package projectdata_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

func TestListRecords(t *testing.T) {
	s := itemsStore(t, nil)
	var body []string
	for i := range 25 {
		body = append(body, fmt.Sprintf(`{"name":"n%c","qty":%d}`, 'a'+i%5, i%3))
	}
	_, err := s.Insert(ctx, "acme", "items", rows(t, "["+strings.Join(body, ",")+"]"))
	if err != nil {
		t.Fatal(err)
	}
	ids := func(l projectdata.RecordList) []int64 {
		out := []int64{}
		for _, r := range l.Rows {
			out = append(out, r["id"].(int64))
		}
		return out
	}
	t.Run("DefaultsToFirstHundredByKey", func(t *testing.T) {
		is := is.New(t)
		l, err := s.ListRecords(ctx, "acme", "items", projectdata.ListOptions{})
		is.NoErr(err)
		is.Equal(l.Table, "items")
		is.Equal(*l.Total, int64(25))
		is.Equal(l.Limit, 100)
		is.Equal(l.Offset, 0)
		is.Equal(len(l.Rows), 25)
		is.Equal(l.Rows[0], projectdata.Row{"id": int64(1), "name": "na", "qty": int64(0), "price": nil, "code": nil, "active": nil, "seen": nil})
	})
	t.Run("Pages", func(t *testing.T) {
		is := is.New(t)
		l, err := s.ListRecords(ctx, "acme", "items", projectdata.ListOptions{Limit: 10, Offset: 20})
		is.NoErr(err)
		is.Equal(*l.Total, int64(25))
		is.Equal(ids(l), []int64{21, 22, 23, 24, 25})
		l, err = s.ListRecords(ctx, "acme", "items", projectdata.ListOptions{Limit: 10, Offset: 30})
		is.NoErr(err)
		is.Equal(ids(l), []int64{})
		b, err := json.Marshal(l)
		is.NoErr(err)
		is.Equal(string(b), `{"table":"items","rows":[],"total":25,"limit":10,"offset":30,"next_cursor":null,"truncated":false}`)
	})
	t.Run("OrdersDescendingWithKeyTieBreak", func(t *testing.T) {
		is := is.New(t)
		l, err := s.ListRecords(ctx, "acme", "items", projectdata.ListOptions{Order: "-qty", Limit: 4})
		is.NoErr(err)
		is.Equal(ids(l), []int64{3, 6, 9, 12}) // qty 2, then by id
		l, err = s.ListRecords(ctx, "acme", "items", projectdata.ListOptions{Order: "-id", Limit: 2})
		is.NoErr(err)
		is.Equal(ids(l), []int64{25, 24})
		l, err = s.ListRecords(ctx, "acme", "items", projectdata.ListOptions{Order: "NAME", Limit: 3, Offset: 4})
		is.NoErr(err)
		is.Equal(ids(l), []int64{21, 2, 7}) // na: 1 6 11 16 21, then nb
	})
	t.Run("ClampsLimit", func(t *testing.T) {
		is := is.New(t)
		for limit, want := range map[int]int{-5: 1, 1: 1, 1000: 1000, 5000: 1000} {
			l, err := s.ListRecords(ctx, "acme", "items", projectdata.ListOptions{Limit: limit})
			is.NoErr(err)
			is.Equal(l.Limit, want)
			is.Equal(len(l.Rows), min(want, 25))
		}
	})
	refusals := []struct {
		name string
		opts projectdata.ListOptions
		code projectdata.Code
	}{
		{"NegativeOffset", projectdata.ListOptions{Offset: -1}, projectdata.ErrInvalidRequest},
		{"UnknownOrder", projectdata.ListOptions{Order: "colour"}, projectdata.ErrColumnNotFound},
		{"SQLAsOrder", projectdata.ListOptions{Order: "qty; DROP TABLE items"}, projectdata.ErrColumnNotFound},
		{"DashOnly", projectdata.ListOptions{Order: "-"}, projectdata.ErrInvalidRequest},
	}
	for _, c := range refusals {
		t.Run("Refuses"+c.name, func(t *testing.T) {
			_, err := s.ListRecords(ctx, "acme", "items", c.opts)
			pdtest.Code(t, err, c.code)
		})
	}
	t.Run("UnknownTable", func(t *testing.T) {
		_, err := s.ListRecords(ctx, "acme", "nope", projectdata.ListOptions{})
		pdtest.Code(t, err, projectdata.ErrTableNotFound)
	})
}
