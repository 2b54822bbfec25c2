package httpapi

import (
	"cmp"
	"errors"
	"slices"
	"strconv"
	"strings"
)

// maxRanges is the most ranges a download's Range header may ask for.
// With more, the header is ignored and the whole file is sent, as RFC 9110
// §14.2 allows for "a set of many small ranges": with overlapping ranges
// ignored too, a multipart answer is at most the file and maxRanges part
// headers, however many ranges a small request lists.
const maxRanges = 16

// byteRange is one range of a file, from first to last inclusive.
type byteRange struct{ first, last int64 }

// rangeForServeContent returns the Range header http.ServeContent is to see
// for a file of size bytes, checked against RFC 9110 §14 where
// ServeContent is not: "" when the header is to be ignored and the whole
// file sent, else a canonical bytes range set.
//
// Ignored (RFC 9110 §14.2 lets a server ignore any Range header, and
// requires it for an unknown unit): a unit other than bytes; a malformed
// set (a position that is not digits, a last position before the first:
// ServeContent refused these with a 416 saying the range was outside the
// file; or no range at all); more than maxRanges ranges; ranges that
// overlap. Ignoring is the simplest answer a client can use: it gets the
// whole file, as it would from a server without ranges.
//
// Kept, canonical: the unit in lower case (unit names are
// case-insensitive, §14.1), each satisfiable range with its last position
// clamped to the file. An unsatisfiable range (first position at or past
// the end, or a suffix of zero bytes, §14.1.1) is dropped, as ServeContent
// drops the first kind but served the second as an empty range with an
// invalid Content-Range. When no range is left the set is "bytes=<size>-",
// for ServeContent to answer 416 with Content-Range: bytes */size after
// its preconditions and If-Range, as it does for any unsatisfiable set.
func rangeForServeContent(header string, size int64) string {
	unit, set, ok := strings.Cut(header, "=")
	if !ok || !strings.EqualFold(unit, "bytes") {
		return ""
	}
	var ranges []byteRange
	n := 0
	for spec := range strings.SplitSeq(set, ",") {
		spec = strings.Trim(spec, " \t") // a list's empty elements and OWS (RFC 9110 §5.6.1)
		if spec == "" {
			continue
		}
		if n++; n > maxRanges {
			return ""
		}
		r, satisfiable, ok := parseRangeSpec(spec, size)
		if !ok {
			return ""
		}
		if satisfiable {
			ranges = append(ranges, r)
		}
	}
	if n == 0 {
		return ""
	}
	if len(ranges) == 0 {
		return "bytes=" + strconv.FormatInt(size, 10) + "-"
	}
	sorted := slices.Clone(ranges)
	slices.SortFunc(sorted, func(a, b byteRange) int { return cmp.Compare(a.first, b.first) })
	for i := 1; i < len(sorted); i++ {
		if sorted[i].first <= sorted[i-1].last {
			return ""
		}
	}
	var b strings.Builder
	b.WriteString("bytes=")
	for i, r := range ranges { // in the order asked for, as the parts are sent
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(r.first, 10))
		b.WriteByte('-')
		b.WriteString(strconv.FormatInt(r.last, 10))
	}
	return b.String()
}

// parseRangeSpec parses one int-range ("first-" or "first-last") or
// suffix-range ("-length") of RFC 9110 §14.1.1 against a file of size
// bytes. ok is false when spec is malformed; satisfiable is false for a
// range that selects none of the file, else r is the bytes it selects.
func parseRangeSpec(spec string, size int64) (r byteRange, satisfiable, ok bool) {
	first, last, ok := strings.Cut(spec, "-")
	if !ok {
		return r, false, false
	}
	if first == "" { // a suffix: the last length bytes, or the whole file when shorter
		length, ok := parsePos(last)
		if !ok {
			return r, false, false
		}
		if length == 0 || size == 0 {
			return r, false, true
		}
		return byteRange{size - min(length, size), size - 1}, true, true
	}
	r.first, ok = parsePos(first)
	if !ok {
		return r, false, false
	}
	r.last = size - 1
	if last != "" {
		l, ok := parsePos(last)
		if !ok || l < r.first {
			return r, false, false
		}
		r.last = min(l, size-1)
	}
	return r, r.first < size, true
}

// parsePos parses a position or length of RFC 9110 §14.1.1, 1*DIGIT: no
// sign, no space. One too large for an int64 is the largest int64, past
// the end of any file.
func parsePos(s string) (int64, bool) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if errors.Is(err, strconv.ErrRange) {
		return n, true // ParseInt gives the largest int64
	}
	return n, err == nil
}
