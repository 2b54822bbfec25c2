package sqlguard

import (
	"fmt"
	"strings"
)

// kind classifies a token.
type kind uint8

const (
	kIdent  kind = iota + 1 // bare identifier or keyword
	kQuoted                 // quoted identifier: "x", [x] or `x`
	kString                 // string literal: 'x'
	kBlob                   // blob literal: x'00'
	kNumber                 // numeric literal: 1, 1.5e3, .5, 0x1F, 1_000
	kParam                  // parameter: ?, ?1, :a, @a, $a, #a
	kPunct                  // operator or punctuation, including ( ) ; ,
)

// token is one significant token; whitespace and comments are dropped.
type token struct {
	kind kind
	text string // the token's bytes in the input
	off  int    // byte offset of the token in the input
}

// lex appends the significant tokens of sql to dst, following SQLite's
// tokenizer (tokenize.c). Input SQLite would treat as an illegal token is
// refused rather than passed on.
func lex(dst []token, sql string) ([]token, error) {
	// SQLite stops reading at a NUL byte, wherever it is.
	if i := strings.IndexByte(sql, 0); i >= 0 {
		return dst, refuse(i, fmt.Sprintf("unexpected character %q", byte(0)))
	}
	i := 0
	for i < len(sql) {
		c := sql[i]
		start := i
		var k kind
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r':
			i++
			continue
		case strings.HasPrefix(sql[i:], bom):
			i += len(bom) // SQLite skips a UTF-8 byte order mark as whitespace
			continue
		case c == '-' && at(sql, i+1) == '-':
			if n := strings.IndexByte(sql[i:], '\n'); n >= 0 {
				i += n + 1
			} else {
				i = len(sql)
			}
			continue
		case c == '/' && at(sql, i+1) == '*':
			n := strings.Index(sql[i+2:], "*/")
			if n < 0 {
				return dst, refuse(i, "unterminated block comment")
			}
			i += 2 + n + 2
			continue
		case (c == 'x' || c == 'X') && at(sql, i+1) == '\'':
			k = kBlob
			n := strings.IndexByte(sql[i+2:], '\'')
			if n < 0 {
				return dst, refuse(i, "unterminated blob literal")
			}
			if n%2 != 0 || !allHex(sql[i+2:i+2+n]) {
				return dst, refuse(i, "malformed blob literal")
			}
			i += 2 + n + 1
		case isIDStart(c):
			k = kIdent
			i = skip(sql, i+1, isIDChar)
		case isDigit(c) || c == '.' && isDigit(at(sql, i+1)):
			k = kNumber
			i = lexNumber(sql, i)
			if isIDChar(at(sql, i)) {
				return dst, refuse(start, "malformed number")
			}
		case c == '\'':
			k = kString
			if i = lexQuoted(sql, i, '\''); i < 0 {
				return dst, refuse(start, "unterminated string literal")
			}
		case c == '"' || c == '`':
			k = kQuoted
			if i = lexQuoted(sql, i, c); i < 0 {
				return dst, refuse(start, "unterminated quoted identifier")
			}
		case c == '[':
			k = kQuoted
			n := strings.IndexByte(sql[i:], ']')
			if n < 0 {
				return dst, refuse(start, "unterminated quoted identifier")
			}
			i += n + 1
		case c == '?':
			k = kParam
			i = skip(sql, i+1, isDigit)
		case c == ':' || c == '@' || c == '$' || c == '#':
			k = kParam
			if i = lexParam(sql, i); i < 0 {
				return dst, refuse(start, "malformed parameter")
			}
		default:
			k = kPunct
			n := punctLen(sql, i)
			if n == 0 {
				return dst, refuse(start, fmt.Sprintf("unexpected character %q", c))
			}
			i += n
		}
		dst = append(dst, token{kind: k, text: sql[start:i], off: start})
	}
	return dst, nil
}

// at returns sql[i], or 0 past the end of sql.
func at(sql string, i int) byte {
	if i < len(sql) {
		return sql[i]
	}
	return 0
}

// skip returns the index of the first byte at or after i that is not ok.
func skip(sql string, i int, ok func(byte) bool) int {
	for i < len(sql) && ok(sql[i]) {
		i++
	}
	return i
}

// lexQuoted returns the index just past the literal opened by the quote q at
// sql[i], where a doubled quote stands for itself, or -1 if it is not closed.
func lexQuoted(sql string, i int, q byte) int {
	for j := i + 1; j < len(sql); j++ {
		if sql[j] != q {
			continue
		}
		if at(sql, j+1) != q {
			return j + 1
		}
		j++
	}
	return -1
}

// lexParam returns the index just past the parameter at sql[i], which starts
// with ":", "@", "$" or "#", or -1 if it is malformed. As in SQLite, the name
// may contain "::" and end in a Tcl-style "(…)" suffix that takes every byte
// up to the ")", which must come before any white space: "$a(x;y)" is one
// token, "$a(x y)" is malformed.
func lexParam(sql string, i int) int {
	named := false
loop:
	for i++; i < len(sql); i++ {
		switch c := sql[i]; {
		case isIDChar(c):
			named = true
		case c == '(' && named:
			for i++; i < len(sql) && !isSpace(sql[i]) && sql[i] != ')'; i++ {
			}
			if at(sql, i) != ')' {
				return -1
			}
			i++
			break loop
		case c == ':' && at(sql, i+1) == ':':
			i++
		default:
			break loop
		}
	}
	if !named {
		return -1
	}
	return i
}

// lexNumber returns the index just past the numeric literal at sql[i]. Like
// SQLite it accepts "_" among the digits; an identifier character right
// after the number makes it malformed, which the caller checks.
func lexNumber(sql string, i int) int {
	if sql[i] == '0' && (at(sql, i+1) == 'x' || at(sql, i+1) == 'X') && isHex(at(sql, i+2)) {
		return skip(sql, i+2, isHexOrSep)
	}
	i = skip(sql, i, isDigitOrSep)
	if at(sql, i) == '.' {
		i = skip(sql, i+1, isDigitOrSep)
	}
	if e := at(sql, i); e == 'e' || e == 'E' {
		s := at(sql, i+1)
		if isDigit(s) || (s == '+' || s == '-') && isDigit(at(sql, i+2)) {
			i = skip(sql, i+2, isDigitOrSep)
		}
	}
	return i
}

// punctLen returns the length of the operator at sql[i], or 0 if sql[i]
// does not start one.
func punctLen(sql string, i int) int {
	next := at(sql, i+1)
	switch sql[i] {
	case '(', ')', ';', ',', '.', '+', '*', '/', '%', '&', '~':
		return 1
	case '-':
		switch {
		case next == '>' && at(sql, i+2) == '>':
			return 3 // ->>
		case next == '>':
			return 2 // ->
		}
		return 1
	case '=':
		if next == '=' {
			return 2
		}
		return 1
	case '<':
		if next == '=' || next == '>' || next == '<' {
			return 2
		}
		return 1
	case '>':
		if next == '=' || next == '>' {
			return 2
		}
		return 1
	case '|':
		if next == '|' {
			return 2
		}
		return 1
	case '!':
		if next == '=' {
			return 2
		}
	}
	return 0
}

// bom is the UTF-8 byte order mark.
const bom = "\xEF\xBB\xBF"

// isSpace reports whether c is white space to sqlite3Isspace.
func isSpace(c byte) bool { return c == ' ' || '\t' <= c && c <= '\r' }

func isDigit(c byte) bool      { return '0' <= c && c <= '9' }
func isDigitOrSep(c byte) bool { return isDigit(c) || c == '_' }
func isHex(c byte) bool        { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }
func isHexOrSep(c byte) bool   { return isHex(c) || c == '_' }

// isIDStart reports whether c can start an identifier: an ASCII letter, "_"
// or any byte of a multi-byte UTF-8 sequence.
func isIDStart(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c >= 0x80
}

// isIDChar reports whether c can continue an identifier.
func isIDChar(c byte) bool { return isIDStart(c) || isDigit(c) || c == '$' }

func allHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isHex(s[i]) {
			return false
		}
	}
	return true
}
