package projectdata

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/matryer/is"
)

// TestAppendShortFixed: appendShortFixed writes what strconv writes,
// shortest and without exponent, whenever it writes at all, and it does
// write the decimals of few digits (prices, measures); the change log's
// and the rows' encoders built on it write what they wrote with strconv
// alone.
func TestAppendShortFixed(t *testing.T) {
	is := is.New(t)
	values := []float64{
		0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64, math.SmallestNonzeroFloat64,
		1e-15, 1e-16, 1.5e-15, 999999999999999, 1e15, 1e15 - 0.5, 99999999999999.9, 0.1, 0.2, 0.3, 0.1 + 0.2, 1.0 / 3,
		-0.5, 2.5, 5.25, 1e-4, 9.9999e-5, 1e6, 999999.9, 1e21, 1e-6, 123456789.125, 0.000123, -7, 4503599627370496.5,
		math.Nextafter(0.1, 1), math.Nextafter(1e-4, 0), math.Nextafter(1e6, 0), 9007199254740993,
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		// decimals of a few digits, as people write them
		d := rng.IntN(16)
		n := rng.Int64N(int64(math.Pow10(1 + rng.IntN(16))))
		f, err := strconv.ParseFloat(strconv.FormatInt(n, 10)+"e-"+strconv.Itoa(d), 64)
		is.NoErr(err)
		values = append(values, f, -f)
		// and any double
		values = append(values, math.Float64frombits(rng.Uint64()), float64(rng.Int64N(1<<53))/float64(1+rng.IntN(1000)))
	}
	taken := 0
	for _, f := range values {
		want := strconv.AppendFloat([]byte("x"), f, 'f', -1, 64)
		if got, ok := appendShortFixed([]byte("x"), f); ok {
			taken++
			if string(got) != string(want) {
				t.Fatalf("appendShortFixed(%v) = %s, want %s", f, got, want)
			}
		}
		if got := appendImageFloat(nil, f); string(got) != string(imageFloatByStrconv(f)) {
			t.Fatalf("appendImageFloat(%v) = %s, want %s", f, got, imageFloatByStrconv(f))
		}
		if got, ok := appendJSONFloat(nil, f); ok != (!math.IsNaN(f) && !math.IsInf(f, 0)) || string(got) != string(jsonFloatByStrconv(f)) {
			t.Fatalf("appendJSONFloat(%v) = %s, want %s", f, got, jsonFloatByStrconv(f))
		}
	}
	is.True(taken > len(values)/3) // the decimals, not only the odd ones
	for _, f := range []float64{5.25, 0.1, 123.456, -42, 1e-4, 999999.99} {
		_, ok := appendShortFixed(nil, f)
		is.True(ok)
	}
}

// imageFloatByStrconv is appendImageFloat as it was, with strconv alone.
func imageFloatByStrconv(f float64) []byte {
	b := strconv.AppendFloat(nil, f, 'g', -1, 64)
	for _, c := range b {
		if c == '.' || c == 'e' || c == 'E' || c == 'n' {
			return b
		}
	}
	return append(b, ".0"...)
}

// jsonFloatByStrconv is appendJSONFloat as it was, with strconv alone.
func jsonFloatByStrconv(f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b := strconv.AppendFloat(nil, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
