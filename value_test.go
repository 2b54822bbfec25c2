package projectdata_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// valuesStore is a project with a table v of one column per type.
func valuesStore(t *testing.T) *projectdata.Store {
	t.Helper()
	s, _ := pdtest.Open(t, nil)
	if _, _, err := s.CreateProject(ctx, "acme", ""); err != nil {
		t.Fatal(err)
	}
	createTable(t, s, "v",
		projectdata.ColumnDef{Name: "i", Type: projectdata.TypeInteger},
		projectdata.ColumnDef{Name: "r", Type: projectdata.TypeReal},
		projectdata.ColumnDef{Name: "n", Type: projectdata.TypeNumeric},
		projectdata.ColumnDef{Name: "b", Type: projectdata.TypeBoolean},
		projectdata.ColumnDef{Name: "d", Type: projectdata.TypeDatetime},
		projectdata.ColumnDef{Name: "t", Type: projectdata.TypeText},
	)
	return s
}

func TestLossyNumbersAreRefused(t *testing.T) {
	s := valuesStore(t)
	cases := []struct {
		name string
		row  string
	}{
		{"IntegerBeyondRealPrecision", `{"r": 9007199254740993}`},
		{"DigitsBeyondNumericPrecision", `{"n": 1.2345678901234567890123e22}`},
		{"IntegerBeyondInt64InNumeric", `{"n": 12345678901234567890123}`},
		{"IntegerBeyondInt64InInteger", `{"i": 9223372036854775808}`},
		{"TextBeyondRealPrecision", `{"r": "9007199254740993"}`},
		{"Overflow", `{"r": 1e400}`},
		{"HugeExponentIsCheap", `{"n": 1e-100000000}`},
		{"HugeExponentInteger", `{"i": 1e100000000}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.Insert(ctx, "acme", "v", rows(t, c.row))
			pdtest.Code(t, err, projectdata.ErrInvalidColumnValue)
		})
	}
	t.Run("GoInt64BeyondRealPrecision", func(t *testing.T) {
		_, err := s.Insert(ctx, "acme", "v", []projectdata.Row{{"r": int64(1<<53 + 1)}})
		pdtest.Code(t, err, projectdata.ErrInvalidColumnValue)
	})
	t.Run("ExactNumbersAreKept", func(t *testing.T) {
		is := is.New(t)
		res, err := s.Insert(ctx, "acme", "v", rows(t, `{"r": 0.1, "n": 9007199254740993, "i": 2.0}`))
		is.NoErr(err)
		row, err := s.GetRecord(ctx, "acme", "v", res.InsertedIDs[0])
		is.NoErr(err)
		is.Equal(row["r"], 0.1)
		is.Equal(row["n"], int64(9007199254740993))
		is.Equal(row["i"], int64(2))
		res, err = s.Insert(ctx, "acme", "v", rows(t, `{"r": 1e22, "n": 1.5, "i": 1e3}`))
		is.NoErr(err)
		row, err = s.GetRecord(ctx, "acme", "v", res.InsertedIDs[0])
		is.NoErr(err)
		is.Equal(row["r"], 1e22)
		is.Equal(row["n"], 1.5)
		is.Equal(row["i"], int64(1000))
	})
}

// A number that does not fit is shown as it came: text quoted, a number
// bare.
func TestRefusedNumbersAreShownAsSent(t *testing.T) {
	s := valuesStore(t)
	cases := []struct {
		name string
		row  projectdata.Row
		want string
	}{
		{"Text", rows(t, `{"i": "1.5"}`)[0], `"1.5" does not fit column type INTEGER`},
		{"Number", rows(t, `{"i": 1.5}`)[0], `1.5 does not fit column type INTEGER`},
		{"TextLosingDigits", rows(t, `{"r": "9007199254740993"}`)[0], `"9007199254740993" would lose digits in a REAL column`},
		{"NumberLosingDigits", rows(t, `{"r": 9007199254740993}`)[0], `9007199254740993 would lose digits in a REAL column`},
		{"GoFloat", projectdata.Row{"b": 2.0}, `2 does not fit column type BOOLEAN`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.Insert(ctx, "acme", "v", []projectdata.Row{c.row})
			pdtest.Code(t, err, projectdata.ErrInvalidColumnValue)
			if !strings.HasSuffix(err.Error(), c.want) {
				t.Fatalf("error %q, want it to end in %q", err, c.want)
			}
		})
	}
}

func TestDatetimeIsCanonicalUTC(t *testing.T) {
	s := valuesStore(t)
	cases := []struct{ in, stored string }{
		{"2024-01-01", "2024-01-01T00:00:00.000Z"},
		{"2024-01-01 00:00:00", "2024-01-01T00:00:00.000Z"},
		{"2024-01-01T05:30:00+05:00", "2024-01-01T00:30:00.000Z"},
		{"2024-01-01T00:00:00.5Z", "2024-01-01T00:00:00.500Z"},
		{"2024-01-01T12:00", "2024-01-01T12:00:00.000Z"},
		// Minutes with an offset, lower case t and z, a space before the
		// time with any offset, offsets of hours alone or without their
		// colon (PostgreSQL writes +05), and the basic form.
		{"2024-01-01T12:00Z", "2024-01-01T12:00:00.000Z"},
		{"2024-01-01T12:00+02:00", "2024-01-01T10:00:00.000Z"},
		{"2024-01-01 12:00", "2024-01-01T12:00:00.000Z"},
		{"2024-01-01 12:00-01:30", "2024-01-01T13:30:00.000Z"},
		{"2024-01-01t12:00:00.25z", "2024-01-01T12:00:00.250Z"},
		{"2024-01-01 05:30:00.123+05", "2024-01-01T00:30:00.123Z"},
		{"2024-01-01T05:30:00-0130", "2024-01-01T07:00:00.000Z"},
		{"2024-01-01T05:30+0530", "2024-01-01T00:00:00.000Z"},
		{"20240101", "2024-01-01T00:00:00.000Z"},
		{"20240101T0530", "2024-01-01T05:30:00.000Z"},
		{"20240101T053000Z", "2024-01-01T05:30:00.000Z"},
		{"20240101T053000.5+0100", "2024-01-01T04:30:00.500Z"},
		{"20240101t053000-05", "2024-01-01T10:30:00.000Z"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			is := is.New(t)
			res, err := s.Insert(ctx, "acme", "v", []projectdata.Row{{"d": c.in}})
			is.NoErr(err)
			row, err := s.GetRecord(ctx, "acme", "v", res.InsertedIDs[0])
			is.NoErr(err)
			is.Equal(row["d"], c.stored)
		})
	}
	t.Run("GoTime", func(t *testing.T) {
		is := is.New(t)
		at := time.Date(2024, 1, 1, 8, 0, 0, 0, time.FixedZone("", 8*3600))
		res, err := s.Insert(ctx, "acme", "v", []projectdata.Row{{"d": at}})
		is.NoErr(err)
		row, err := s.GetRecord(ctx, "acme", "v", res.InsertedIDs[0])
		is.NoErr(err)
		is.Equal(row["d"], "2024-01-01T00:00:00.000Z")
	})
	t.Run("FinerThanMillisecondIsRefused", func(t *testing.T) {
		_, err := s.Insert(ctx, "acme", "v", []projectdata.Row{{"d": "2024-01-01T00:00:00.0001Z"}})
		pdtest.Code(t, err, projectdata.ErrInvalidColumnValue)
	})
	t.Run("OutOfISO8601IsRefused", func(t *testing.T) {
		// Go's parser takes these; ISO 8601 has hours and offset hours of
		// two digits, offset hours up to 23 and minutes up to 59.
		for _, in := range []string{
			"2024-01-01T10:00:00+24:00", "2024-01-01T10:00:00-24:00", "2024-01-01 10:00:00+24:00",
			"2024-01-01T10:00:00+00:60", "2024-01-01T10:00:00.000+14:60",
			"2024-01-01T1:00:00Z", "2024-01-01T1:00", "2024-01-01 1:00:00",
			// Offsets out of range or of other lengths, the basic form cut
			// short, a space for a T in it, a date without its day.
			"2024-01-01T10:00:00+24", "2024-01-01T10:00:00+2400", "2024-01-01T10:00:00+0060",
			"2024-01-01T10:00:00+2", "2024-01-01T10:00:00+020", "2024-01-01T10:00:00+02000",
			"2024-01-01T10:00:00+02:0", "2024-01-01T10:00+", "20240101T05", "20240101T05300",
			"20240101 053000", "20240101T053000+24", "2024010", "202401011", "2024-01-01T10:00:00Zz",
		} {
			_, err := s.Insert(ctx, "acme", "v", []projectdata.Row{{"d": in}})
			pdtest.Code(t, err, projectdata.ErrInvalidColumnValue)
		}
		is := is.New(t)
		res, err := s.Insert(ctx, "acme", "v", []projectdata.Row{{"d": "2024-01-01T10:00:00.000-23:59"}})
		is.NoErr(err)
		row, err := s.GetRecord(ctx, "acme", "v", res.InsertedIDs[0])
		is.NoErr(err)
		is.Equal(row["d"], "2024-01-02T09:59:00.000Z")
	})
	t.Run("TextOrderIsTimeOrder", func(t *testing.T) {
		is := is.New(t)
		// 00:30Z is later than 05:00+05:00 (00:00Z), though its text sorts first.
		_, err := s.Insert(ctx, "acme", "v", []projectdata.Row{{"d": "2030-01-01T05:00:00+05:00"}, {"d": "2030-01-01T00:30:00Z"}})
		is.NoErr(err)
		res, err := s.Query(ctx, "acme", projectdata.QueryRequest{SQL: `SELECT d FROM v WHERE d >= '2030-01-01' ORDER BY d`})
		is.NoErr(err)
		is.Equal(res.Rows[0]["d"], "2030-01-01T00:00:00.000Z")
		is.Equal(res.Rows[1]["d"], "2030-01-01T00:30:00.000Z")
	})
	t.Run("WhereComparesInstants", func(t *testing.T) {
		is := is.New(t)
		n, err := s.DeleteRecords(ctx, "acme", "v", projectdata.BulkDelete{Where: projectdata.Where{
			{Column: "d", Op: projectdata.WhereGt, Value: "2030-01-01T05:15:00+05:00"}, // 00:15Z
		}})
		is.NoErr(err)
		is.Equal(n.AffectedRows, int64(1)) // only 00:30Z
	})
}

// celsius is a named integer type, as applications declare them.
type celsius int16

func TestGoValues(t *testing.T) {
	s := valuesStore(t)
	t.Run("EveryIntegerWidth", func(t *testing.T) {
		is := is.New(t)
		for _, v := range []any{int8(-8), int16(16), int32(32), int64(64), uint(1), uint8(8), uint16(16), uint32(32), uint64(64), celsius(-40)} {
			res, err := s.Insert(ctx, "acme", "v", []projectdata.Row{{"i": v, "r": v, "t": v}})
			is.NoErr(err)
			row, err := s.GetRecord(ctx, "acme", "v", res.InsertedIDs[0])
			is.NoErr(err)
			is.True(row["i"] != nil)
		}
	})
	t.Run("Uint64OverflowIsNamed", func(t *testing.T) {
		is := is.New(t)
		_, err := s.Insert(ctx, "acme", "v", []projectdata.Row{{"i": uint64(math.MaxUint64)}})
		pdtest.Code(t, err, projectdata.ErrInvalidColumnValue)
		is.True(strings.Contains(err.Error(), "overflows"))
	})
	t.Run("NamedStringAndFloat32", func(t *testing.T) {
		type label string
		is := is.New(t)
		res, err := s.Insert(ctx, "acme", "v", []projectdata.Row{{"t": label("x"), "r": float32(0.5), "b": true}})
		is.NoErr(err)
		row, err := s.GetRecord(ctx, "acme", "v", res.InsertedIDs[0])
		is.NoErr(err)
		is.Equal(row["t"], "x")
		is.Equal(row["r"], 0.5)
	})
	t.Run("GoSlicesForIn", func(t *testing.T) {
		is := is.New(t)
		_, err := s.Insert(ctx, "acme", "v", []projectdata.Row{{"i": 1001, "t": "a"}, {"i": 1002, "t": "b"}, {"i": 1003, "t": "c"}})
		is.NoErr(err)
		upd, err := s.UpdateRecords(ctx, "acme", "v", projectdata.BulkUpdate{
			Data:  projectdata.Row{"n": 1},
			Where: projectdata.Where{{Column: "i", Op: projectdata.WhereIn, Value: []int{1001, 1003}}},
		})
		is.NoErr(err)
		is.Equal(upd.AffectedRows, int64(2))
		upd, err = s.UpdateRecords(ctx, "acme", "v", projectdata.BulkUpdate{
			Data: projectdata.Row{"n": 2},
			Where: projectdata.Where{
				{Column: "t", Op: projectdata.WhereNotIn, Value: []string{"a", "c"}},
				{Column: "i", Op: projectdata.WhereGe, Value: celsius(1000)},
			},
		})
		is.NoErr(err)
		is.Equal(upd.AffectedRows, int64(1))
	})
	t.Run("LikeTakesTextOnAnyColumn", func(t *testing.T) {
		is := is.New(t)
		upd, err := s.UpdateRecords(ctx, "acme", "v", projectdata.BulkUpdate{
			Data:  projectdata.Row{"n": 3},
			Where: projectdata.Where{{Column: "i", Op: projectdata.WhereLike, Value: "100%"}},
		})
		is.NoErr(err)
		is.Equal(upd.AffectedRows, int64(3))
	})
	t.Run("InListOfManyLengths", func(t *testing.T) {
		is := is.New(t)
		for n := 1; n <= 40; n++ {
			list := make([]int64, n)
			for i := range list {
				list[i] = 1001 + int64(i%3)
			}
			del := projectdata.Where{{Column: "i", Op: projectdata.WhereIn, Value: list}, {Column: "i", Op: projectdata.WhereLt, Value: 0}}
			res, err := s.DeleteRecords(ctx, "acme", "v", projectdata.BulkDelete{Where: del})
			is.NoErr(err)
			is.Equal(res.AffectedRows, int64(0))
		}
	})
}

// TestErrorsKeepTheirCause: a row's failure is wrapped with its index,
// not re-formatted: the cause's code and message stay reachable.
func TestErrorsKeepTheirCause(t *testing.T) {
	is := is.New(t)
	s := valuesStore(t)
	_, err := s.Insert(ctx, "acme", "v", rows(t, `[{"i": 1}, {"i": 2}, {"i": "abc"}]`))
	pdtest.Code(t, err, projectdata.ErrInvalidColumnValue)
	is.True(strings.HasPrefix(err.Error(), `row 2: column "i": `))
	var cause *projectdata.Error
	is.True(errors.As(err, &cause))
	is.Equal(cause.Message, `"abc" does not fit column type INTEGER`) // the cause, unchanged
	is.Equal(cause.Code, projectdata.ErrInvalidColumnValue)
}

// TestCheckValueIsWhatNoColumnTakes: CheckValue refuses a value exactly
// when the Store's insert refuses it in a column of every type, with the
// same code, as its doc says (a TEXT column takes every value some column
// takes).
func TestCheckValueIsWhatNoColumnTakes(t *testing.T) {
	s := valuesStore(t)
	type name string
	type count uint16
	seven := 7
	for _, v := range []any{
		nil, true, "x", "2026-11-24T10:00:00Z", "\xff", "a\x00b", name("n"), count(3), int8(-1),
		uint64(math.MaxInt64), uint64(math.MaxUint64), float32(1.5), 1e300, math.NaN(), math.Inf(-1),
		json.Number("1e400"), json.Number("12"), time.Date(2026, 11, 24, 10, 0, 0, 1, time.UTC),
		[]byte("x"), &seven, struct{}{}, [2]byte{}, map[string]any{"a": 1}, []any{1},
	} {
		t.Run(fmt.Sprintf("%T %v", v, v), func(t *testing.T) {
			is := is.New(t)
			var taken bool
			for _, col := range []string{"i", "r", "n", "b", "d", "t"} {
				_, err := s.Insert(ctx, "acme", "v", []projectdata.Row{{col: v}})
				if err == nil {
					taken = true
				} else {
					pdtest.Code(t, err, projectdata.ErrInvalidColumnValue)
				}
			}
			err := projectdata.CheckValue(v)
			is.Equal(err == nil, taken) // refused exactly when no column takes it
			if err != nil {
				pdtest.Code(t, err, projectdata.ErrInvalidColumnValue)
			}
		})
	}
}
