package projectdata

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// TestIsSlug compares isSlug with the pattern it implements, on every
// string of up to three characters of a small alphabet and on lengths
// around the limit.
func TestIsSlug(t *testing.T) {
	is := is.New(t)
	pattern := regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)
	alphabet := []string{"", "a", "z", "0", "9", "-", "A", "_", ".", "/", "é", "\x00", "`", "{"}
	for _, a := range alphabet {
		for _, b := range alphabet {
			for _, c := range alphabet {
				s := a + b + c
				is.Equal(isSlug(s), pattern.MatchString(s)) // s
			}
		}
	}
	for n := 60; n <= 66; n++ {
		for _, s := range []string{strings.Repeat("a", n), "a" + strings.Repeat("-", n-1), strings.Repeat("9", n-1) + "B"} {
			is.Equal(isSlug(s), pattern.MatchString(s)) // s
		}
	}
}

// TestAppendTime compares appendTime with time.AppendFormat: random
// instants over the whole range of years it writes itself, both sides of
// that range, and non-UTC locations.
func TestAppendTime(t *testing.T) {
	is := is.New(t)
	r := rand.New(rand.NewPCG(1, 2))
	lo := time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano() / 1e3
	hi := time.Date(10001, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano() / 1e3
	zones := []*time.Location{time.UTC, time.FixedZone("east", 14*3600), time.FixedZone("west", -12*3600-1800)}
	check := func(tm time.Time) {
		want := tm.UTC().AppendFormat([]byte("x"), timeLayout)
		is.Equal(string(appendTime([]byte("x"), tm)), string(want))
	}
	for range 200000 {
		// Unix microseconds overflow int64 nanoseconds: build from seconds.
		sec := lo/1e6 + r.Int64N((hi-lo)/1e6)
		tm := time.Unix(sec, r.Int64N(1e9)).In(zones[r.IntN(len(zones))])
		check(tm)
	}
	for _, tm := range []time.Time{
		{},
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(2026, 11, 23, 8, 5, 9, 123456789, time.FixedZone("x", 3600)),
	} {
		check(tm)
	}
	is.Equal(string(Timestamp{time.Date(2026, 11, 21, 14, 5, 9, 123e6, time.UTC)}.AppendJSON(nil)), `"2026-11-21T14:05:09.123Z"`)
}
