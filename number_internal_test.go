package projectdata

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestFewDigitsRoundTrip checks exactFloat's shortcut against the digit by
// digit check: every plain decimal fewDigits lets through reads back as
// itself, over random numbers of 1 to 20 digits, and the shortcut takes
// the short numbers.
func TestFewDigitsRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 200_000
	if testing.Short() {
		n = 20_000
	}
	short := 0
	for range n {
		var b strings.Builder
		if r.IntN(4) == 0 {
			b.WriteByte('-')
		}
		digits := 1 + r.IntN(20)
		point := r.IntN(digits + 1)
		for i := range digits {
			if i == point && i > 0 {
				b.WriteByte('.')
			}
			if i == 0 && digits > 1 && point != 1 && r.IntN(3) > 0 {
				b.WriteByte('1' + byte(r.IntN(9)))
				continue
			}
			b.WriteByte('0' + byte(r.IntN(10)))
		}
		num := b.String()
		f, err := strconv.ParseFloat(num, 64)
		if err != nil {
			t.Fatal(num, err)
		}
		if fewDigits(num) {
			short++
			if !roundTrips(num, f) {
				t.Fatalf("%s reads as %v, which writes back as another number", num, f)
			}
		}
	}
	if short < n/2 {
		t.Fatalf("only %d of %d numbers took the shortcut", short, n)
	}
	for _, num := range []string{"1e5", "9007199254740993", "0.1234567890123456", "1234567890123456"} {
		if fewDigits(num) {
			t.Errorf("%s took the shortcut", num)
		}
	}
}
