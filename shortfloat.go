package projectdata

import (
	"math"
	"strconv"
)

// appendShortFixed appends strconv.AppendFloat(b, f, 'f', -1, 64) (the
// shortest decimal that reads back as f, without exponent) when f is a
// decimal of at most 15 significant digits, such as a price or a
// measure, and ok is false otherwise, b unchanged: strconv's shortest
// formatting took most of the time of encoding such rows.
//
// Why it is exact: if f times 10^d is an integer n below 10^15 (n/10^d
// being an exact division of two exact doubles, rounded once, as parsing
// rounds) and n/10^d is f, then n/10^d is a decimal of at most 15
// significant digits that reads back as f; two distinct such decimals
// never read back as one double (a double keeps 15 digits: DBL_DIG), so
// no shorter decimal reads back as f, unless n ends with a zero, which
// the smallest d that gives an integer excludes (and is checked).
func appendShortFixed(b []byte, f float64) (_ []byte, ok bool) {
	a := math.Abs(f)
	if !(a >= 1e-15) { // zero (maybe -0), tiny and NaN go to strconv
		return b, false
	}
	for d, p := range shortFixedPow10 {
		x := a * p
		if x >= 1e15 {
			return b, false
		}
		if x != math.Trunc(x) {
			continue
		}
		n := uint64(x)
		if x/p != a || (d > 0 && n%10 == 0) {
			return b, false
		}
		if f < 0 {
			b = append(b, '-')
		}
		unit := uint64(p)
		b = strconv.AppendUint(b, n/unit, 10)
		if d == 0 {
			return b, true
		}
		b = append(b, '.')
		frac := n % unit
		for unit /= 10; unit > frac && unit > 1; unit /= 10 {
			b = append(b, '0') // the fraction's leading zeros
		}
		return strconv.AppendUint(b, frac, 10), true
	}
	return b, false
}

// shortFixedPow10 are the exact powers of ten appendShortFixed tries.
var shortFixedPow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}
