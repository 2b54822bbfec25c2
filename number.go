package projectdata

import (
	"math"
	"strconv"
	"strings"
)

// decimal is a number written in decimal, normalized so that two spellings
// of one value compare equal: its value is 0.digits × 10^exp, digits has no
// leading or trailing zero, and zero has no digits (and no sign).
type decimal struct {
	neg    bool
	digits string
	exp    int
}

// maxDecimalExp bounds the exponents parseDecimal accepts, far beyond any
// int64 or float64, so that no input makes the parse costly.
const maxDecimalExp = 1 << 20

// parseDecimal parses a number in JSON's syntax (an optional '-', digits,
// an optional fraction and exponent). ok is false for anything else and
// for exponents beyond ±maxDecimalExp.
func parseDecimal(s string) (d decimal, ok bool) {
	if strings.HasPrefix(s, "-") {
		d.neg, s = true, s[1:]
	}
	mantissa, expText, hasExp := strings.Cut(strings.ToLower(s), "e")
	whole, frac, _ := strings.Cut(mantissa, ".")
	if whole == "" || !allDigits(whole) || !allDigits(frac) || (strings.Contains(mantissa, ".") && frac == "") {
		return d, false
	}
	exp := 0
	if hasExp {
		n, err := strconv.Atoi(strings.TrimPrefix(expText, "+"))
		if err != nil || n > maxDecimalExp || n < -maxDecimalExp || expText == "" || strings.HasPrefix(expText, "+-") {
			return d, false
		}
		exp = n
	}
	digits := whole + frac
	exp += len(whole)
	trimmed := strings.TrimLeft(digits, "0")
	exp -= len(digits) - len(trimmed)
	d.digits = strings.TrimRight(trimmed, "0")
	d.exp = exp
	if d.digits == "" {
		return decimal{}, true
	}
	return d, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// int64 returns the value as an int64 when it is an integer in range.
func (d decimal) int64() (int64, bool) {
	switch {
	case d.digits == "":
		return 0, true
	case d.exp < len(d.digits) || d.exp > 19:
		return 0, false // a fraction, or too many digits
	}
	s := d.digits + strings.Repeat("0", d.exp-len(d.digits))
	if d.neg {
		s = "-" + s
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// exactInt parses a number that is an integer in int64 range, also when
// written with a fraction or exponent (2.0, 1e3).
func exactInt(num string) (int64, bool) {
	if n, err := strconv.ParseInt(num, 10, 64); err == nil {
		return n, true
	}
	d, ok := parseDecimal(num)
	if !ok {
		return 0, false
	}
	return d.int64()
}

// exactFloat parses a number that a float64 holds exactly: one whose
// shortest decimal form reads back as the same value (0.1 and 1e22 are
// exact in this sense; 9007199254740993 and 1.2345678901234567890123e22,
// which would come back as other numbers, are not).
func exactFloat(num string) (float64, bool) {
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, false
	}
	f = storedReal(f)
	if fewDigits(num) {
		// A decimal of at most 15 significant digits (DBL_DIG) between
		// 1e-16 and 1e15 comes back from its nearest float64 unchanged.
		return f, true
	}
	return f, roundTrips(num, f)
}

// storedReal returns f as SQLite stores it in a REAL column: -0 as 0 (a
// REAL that is an integer is kept as one), so that what the change log
// says of an insert is the row as read.
func storedReal(f float64) float64 {
	if f == 0 {
		return 0
	}
	return f
}

// roundTrips reports whether f, read from num, writes back as num's value.
func roundTrips(num string, f float64) bool {
	want, ok := parseDecimal(num)
	if !ok {
		return false
	}
	got, _ := parseDecimal(strconv.FormatFloat(f, 'e', -1, 64))
	return got == want
}

// fewDigits reports whether num is a plain decimal (digits, maybe a sign
// and a fraction, no exponent) of at most 15 significant digits and at
// most 16 digits in all: the common number, which exactFloat need not
// check digit by digit.
func fewDigits(num string) bool {
	digits, significant := 0, 0
	for i := 0; i < len(num); i++ {
		switch c := num[i]; {
		case c >= '0' && c <= '9':
			digits++
			if significant > 0 || c != '0' {
				significant++
			}
		case c == '.' || (c == '-' && i == 0):
		default:
			return false // an exponent
		}
	}
	return significant <= 15 && digits <= 16
}

// floatOfInt returns n as a float64 when the float holds it exactly.
func floatOfInt(n int64) (float64, bool) {
	f := float64(n)
	if f >= math.MaxInt64 || int64(f) != n { // 2^63 itself is out of int64's range
		return 0, false
	}
	return f, true
}
