package projectdata

import (
	"bytes"
	"errors"

	"github.com/ncruces/go-sqlite3"
)

// SQLite's LIKE and GLOB match a pattern by backtracking: '%' followed by
// n characters tries them at every place of the text, so one call costs up
// to the pattern's length times the text's (35 s for a pattern of 4,000
// bytes over 4 MiB). Readers and the writer (a bulk change's where) replace
// like (2 and 3 arguments) and glob with
// the port below of SQLite 3.53.4's likeFunc and patternCompare (func.c)
// and sqlite3Utf8Read (utf.c), which gives the same answers, invalid UTF-8
// included, and stops at the budget.
//
// The price: SQLite rewrites a prefix pattern into a range over an index
// (the LIKE optimization) only for its own functions (a flag that
// sqlite3_create_function cannot set), so in queries "x GLOB 'abc*'" no
// longer searches an index on x: 100,000 rows are scanned in some 25 ms
// instead of 20 µs; adding "x >= 'abc' AND x < 'abd'" searches it again.
// LIKE, case-insensitive, could use only an index of COLLATE NOCASE, which
// no application column or index has, so lists (whose where has like, not
// glob) lose no plan. A call costs about 0.1 µs more than SQLite's.

// compareInfo is how a pattern reads: SQLite's struct compareInfo.
type compareInfo struct {
	matchAll byte // '*' or '%'; 0 when it is the escape
	matchOne byte // '?' or '_'; 0 when it is the escape
	matchSet byte // '[' or 0
	noCase   bool // ASCII letters match either case
}

var (
	globInfo = compareInfo{matchAll: '*', matchOne: '?', matchSet: '['}
	// likeInfo is SQLite's default LIKE; no connection sets PRAGMA
	// case_sensitive_like, and queries cannot.
	likeInfo = compareInfo{matchAll: '%', matchOne: '_', noCase: true}
)

// The results of patternMatcher.compare: SQLite's, and interrupted.
const (
	patternMatch           = 0
	patternNoMatch         = 1
	patternNoWildcardMatch = 2 // no match, whatever a '%' before would take
	patternInterrupted     = 3
)

var (
	errPatternTooComplex = errors.New("LIKE or GLOB pattern too complex")
	errEscapeNotOneChar  = errors.New("ESCAPE expression must be a single character")
)

// like is SQLite's likeFunc: like(pattern, text), like(pattern, text,
// escape) and, with globInfo, glob(pattern, text).
func (c *conn) like(ctx sqlite3.Context, info compareInfo, arg []sqlite3.Value) {
	defer outOfMemory(ctx)
	t0, t1 := arg[0].Type(), arg[1].Type()
	// The driver's SQLite is built with SQLITE_LIKE_DOESNT_MATCH_BLOBS.
	if t0 == sqlite3.BLOB || t1 == sqlite3.BLOB {
		ctx.ResultInt(0)
		return
	}
	var pattern []byte
	if t0 != sqlite3.NULL {
		var ok bool
		if pattern, ok = textOf(arg[0]); !ok {
			ctx.ResultError(sqlite3.NOMEM)
			return
		}
	}
	if len(pattern) > ctx.Conn().Limit(sqlite3.LIMIT_LIKE_PATTERN_LENGTH, -1) {
		ctx.ResultError(errPatternTooComplex)
		return
	}
	escape := uint32(info.matchSet)
	if len(arg) == 3 {
		if arg[2].Type() == sqlite3.NULL {
			ctx.ResultNull()
			return
		}
		esc := arg[2].RawText()
		if esc == nil {
			ctx.ResultError(sqlite3.NOMEM)
			return
		}
		if utf8CharLen(esc) != 1 {
			ctx.ResultError(errEscapeNotOneChar)
			return
		}
		escape, _ = utf8Read(esc, 0)
		if escape == uint32(info.matchAll) {
			info.matchAll = 0
		}
		if escape == uint32(info.matchOne) {
			info.matchOne = 0
		}
	}
	if t0 == sqlite3.NULL || t1 == sqlite3.NULL {
		ctx.ResultNull()
		return
	}
	// The text is SQLite's own (it can be MiBs): nothing calls SQLite, which
	// could move or free it, until the match is done.
	str := arg[1].RawText()
	if str == nil {
		ctx.ResultError(sqlite3.NOMEM)
		return
	}
	m := patternMatcher{c: c, info: info, matchOther: escape, pattern: untilNUL(pattern), str: untilNUL(str)}
	switch m.compare(0, 0) {
	case patternMatch:
		ctx.ResultInt(1)
	case patternInterrupted:
		ctx.ResultError(sqlite3.INTERRUPT)
	default:
		ctx.ResultInt(0)
	}
}

// untilNUL is b up to its first NUL byte: SQLite reads text as a C string.
func untilNUL(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

// patternMatcher matches pattern against str, both without NUL bytes.
type patternMatcher struct {
	c            *conn
	info         compareInfo
	matchOther   uint32 // the escape (LIKE) or '[' (GLOB)
	pattern, str []byte
	steps        int // work since the budget was last looked at
}

// compare is SQLite's patternCompare from pattern[p:] and str[s:].
func (m *patternMatcher) compare(p, s int) int {
	matchAll, matchOne := uint32(m.info.matchAll), uint32(m.info.matchOne)
	escaped := -1 // where the pattern is just past an escaped character
	var c, c2 uint32
	for {
		if m.spent(1) {
			return patternInterrupted
		}
		if p < len(m.pattern) && m.pattern[p] < 0x80 {
			c, p = uint32(m.pattern[p]), p+1
		} else if c, p = utf8Read(m.pattern, p); c == 0 {
			break
		}
		if c == matchAll {
			// Skip the '*' and '?' that follow, taking a character of str
			// for each '?'.
			for {
				c, p = utf8Read(m.pattern, p)
				if c != matchAll && (c != matchOne || matchOne == 0) {
					break
				}
				if c == matchOne {
					if c2, s = utf8Read(m.str, s); c2 == 0 {
						return patternNoWildcardMatch
					}
				}
			}
			if c == 0 {
				return patternMatch // a '*' at the end takes the rest
			}
			if c == m.matchOther {
				if m.info.matchSet == 0 {
					if c, p = utf8Read(m.pattern, p); c == 0 {
						return patternNoWildcardMatch
					}
				} else {
					// "[...]" right after the '*': try it at every place.
					for s < len(m.str) {
						if r := m.compare(p-1, s); r != patternNoMatch {
							return r
						}
						if m.spent(1) {
							return patternInterrupted
						}
						s = skipUTF8(m.str, s)
					}
					return patternNoWildcardMatch
				}
			}
			// c is the first character after the '*': match the rest of
			// the pattern at each place of str just past a c.
			if c < 0x80 {
				stop1, stop2 := byte(c), byte(c)
				if m.info.noCase {
					stop1, stop2 = asciiUpper(byte(c)), asciiLower(byte(c))
				}
				for {
					from := s
					for s < len(m.str) && m.str[s] != stop1 && m.str[s] != stop2 {
						s++
					}
					if m.spent(s - from + 1) {
						return patternInterrupted
					}
					if s == len(m.str) {
						break
					}
					s++
					if r := m.compare(p, s); r != patternNoMatch {
						return r
					}
				}
			} else {
				for {
					if c2, s = utf8Read(m.str, s); c2 == 0 {
						break
					}
					if m.spent(1) {
						return patternInterrupted
					}
					if c2 != c {
						continue
					}
					if r := m.compare(p, s); r != patternNoMatch {
						return r
					}
				}
			}
			return patternNoWildcardMatch
		}
		if c == m.matchOther {
			if m.info.matchSet == 0 {
				if c, p = utf8Read(m.pattern, p); c == 0 {
					return patternNoMatch
				}
				escaped = p
			} else {
				// A class: [...], [^...], with ranges a-z; a ']' first is
				// one of its characters, a '-' last too.
				var prior uint32
				seen, invert := false, false
				if c, s = utf8Read(m.str, s); c == 0 {
					return patternNoMatch
				}
				c2, p = utf8Read(m.pattern, p)
				if c2 == '^' {
					invert = true
					c2, p = utf8Read(m.pattern, p)
				}
				if c2 == ']' {
					if c == ']' {
						seen = true
					}
					c2, p = utf8Read(m.pattern, p)
				}
				for c2 != 0 && c2 != ']' {
					if m.spent(1) {
						return patternInterrupted
					}
					if next := at(m.pattern, p); c2 == '-' && next != ']' && next != 0 && prior > 0 {
						c2, p = utf8Read(m.pattern, p)
						if c >= prior && c <= c2 {
							seen = true
						}
						prior = 0
					} else {
						if c == c2 {
							seen = true
						}
						prior = c2
					}
					c2, p = utf8Read(m.pattern, p)
				}
				if c2 == 0 || seen == invert {
					return patternNoMatch
				}
				continue
			}
		}
		if s < len(m.str) && m.str[s] < 0x80 {
			c2, s = uint32(m.str[s]), s+1
		} else {
			c2, s = utf8Read(m.str, s)
		}
		if c == c2 {
			continue
		}
		if m.info.noCase && c < 0x80 && c2 < 0x80 && asciiLower(byte(c)) == asciiLower(byte(c2)) {
			continue
		}
		if c == matchOne && p != escaped && c2 != 0 {
			continue
		}
		return patternNoMatch
	}
	if s >= len(m.str) {
		return patternMatch
	}
	return patternNoMatch
}

// spent is conn.budgetSpent for this match, counted inline.
func (m *patternMatcher) spent(cost int) bool {
	m.steps += cost
	return m.steps >= budgetCheckEvery && m.c.budgetSpent(&m.steps, 0)
}

// at is z[i], or the NUL that ends z in SQLite past its end.
func at(z []byte, i int) byte {
	if i < len(z) {
		return z[i]
	}
	return 0
}

// utf8Trans1 is SQLite's sqlite3Utf8Trans1: the bits of a character that
// its first byte, 0xc0 and up, holds.
var utf8Trans1 = [64]byte{
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
	0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
	0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17,
	0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f,
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
	0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
	0x00, 0x01, 0x02, 0x03, 0x00, 0x01, 0x00, 0x00,
}

// utf8Read is SQLite's sqlite3Utf8Read: the character at z[i] and where
// the next starts. A byte 0x80-0xbf stands for itself; a byte 0xc0 and up
// takes all the continuation bytes that follow (in 32 bits); an encoding of
// a character under 0x80, of a surrogate, or of 0xfffe or 0xffff is
// 0xfffd. At the end of z it is 0.
func utf8Read(z []byte, i int) (uint32, int) {
	c := uint32(at(z, i))
	i++
	if c >= 0xc0 {
		c = uint32(utf8Trans1[c-0xc0])
		for i < len(z) && z[i]&0xc0 == 0x80 {
			c = c<<6 + uint32(z[i]&0x3f)
			i++
		}
		if c < 0x80 || c&0xfffff800 == 0xd800 || c&0xfffffffe == 0xfffe {
			c = 0xfffd
		}
	}
	return c, i
}

// skipUTF8 is SQLite's SQLITE_SKIP_UTF8: where the character at z[i] ends.
func skipUTF8(z []byte, i int) int {
	i++
	if z[i-1] >= 0xc0 {
		for i < len(z) && z[i]&0xc0 == 0x80 {
			i++
		}
	}
	return i
}

// utf8CharLen is SQLite's sqlite3Utf8CharLen(z, -1): the characters of z
// before its first NUL.
func utf8CharLen(z []byte) int {
	n := 0
	for i := 0; i < len(z) && z[i] != 0; n++ {
		i = skipUTF8(z, i)
	}
	return n
}

func asciiLower(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

func asciiUpper(b byte) byte {
	if 'a' <= b && b <= 'z' {
		return b - ('a' - 'A')
	}
	return b
}
