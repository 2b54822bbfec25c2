package projectdata

import (
	"bytes"

	"github.com/ncruces/go-sqlite3"
)

// SQLite checks its interrupt (the query budget) between the instructions
// of a statement, never inside one function call, and a few of its
// built-in functions take time that grows with the product of their
// arguments' lengths: instr and replace compare the pattern at every place
// of the text, trim, ltrim and rtrim compare every character removed with
// every character of the set, and like and glob try the rest of a pattern
// at every place a wildcard can take (see likefuncs.go). With values of a
// few MiB, which the result budget allows, one call runs for minutes to
// hours, and a query or a list (one read token) holds a core that long. On
// readers and the writer they are replaced by ports of SQLite's own code,
// with the same answers, that stop with SQLITE_INTERRUPT once the
// statement's budget has run out (on the writer, a bulk change's
// Options.WriteTimeout, or its request's end). Others of the kind are
// refused in queries (see sandbox.authorize): the decimal extension's
// decimal_mul and decimal_pow2; the regexp extension's matching (an
// automaton of a state for each character of a pattern of up to
// MaxLikePattern bytes, over every character of the text: a minute for
// 100,000 characters); json_patch, which looks up each key of the patch
// among all the keys of the object (8 s for two objects of 20,000 keys,
// an hour for two of 4 MiB).

// slowFunctions are the functions whose one call can outlast any budget,
// and that no port bounds.
var slowFunctions = map[string]bool{
	"decimal_mul": true, "decimal_pow2": true,
	"regexp": true, "regexpi": true,
	"json_patch": true, "jsonb_patch": true,
}

// budgetCheckEvery is how many bytes a replaced function compares between
// two looks at the budget.
const budgetCheckEvery = 1 << 16

// registerBoundedFunctions replaces the built-in functions above on c,
// a reader or the writer.
func (c *conn) registerBoundedFunctions() error {
	const flags = sqlite3.DETERMINISTIC | sqlite3.INNOCUOUS
	if err := c.db.CreateFunction("instr", 2, flags, c.instr); err != nil {
		return err
	}
	if err := c.db.CreateFunction("replace", 3, flags, c.replace); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		args int
		info compareInfo
	}{{"like", 2, likeInfo}, {"like", 3, likeInfo}, {"glob", 2, globInfo}} {
		err := c.db.CreateFunction(f.name, f.args, flags, func(ctx sqlite3.Context, arg ...sqlite3.Value) {
			c.like(ctx, f.info, arg)
		})
		if err != nil {
			return err
		}
	}
	for name, mode := range map[string]int{"ltrim": 1, "rtrim": 2, "trim": 3} {
		err := c.db.CreateFunction(name, 2, flags, func(ctx sqlite3.Context, arg ...sqlite3.Value) {
			c.trim(ctx, mode, arg)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// budgetSpent reports whether the running statement's budget has run out,
// after work of the given cost (bytes compared): it looks at the clock
// once the work counted in *n reaches budgetCheckEvery. The budget is the
// context SQLite's own interrupt watches (Conn.SetInterrupt): a query's,
// a list's, a bulk change's write budget, or the caller's otherwise.
func (c *conn) budgetSpent(n *int, cost int) bool {
	if *n += cost; *n < budgetCheckEvery {
		return false
	}
	*n = 0
	return c.db.GetInterrupt().Err() != nil
}

// instr is SQLite's instrFunc.
func (c *conn) instr(ctx sqlite3.Context, arg ...sqlite3.Value) {
	defer outOfMemory(ctx)
	th, tn := arg[0].Type(), arg[1].Type()
	if th == sqlite3.NULL || tn == sqlite3.NULL {
		ctx.ResultNull()
		return
	}
	var hay, needle []byte
	isText, ok1, ok2 := true, true, true
	switch {
	case th == sqlite3.BLOB && tn == sqlite3.BLOB:
		hay, needle, isText = arg[0].Blob(nil), arg[1].Blob(nil), false
	case th != sqlite3.BLOB && tn != sqlite3.BLOB:
		hay, ok1 = textOf(arg[0])
		needle, ok2 = textOf(arg[1])
	default: // one blob: both as text, without changing the arguments
		h, n := arg[0].Dup(), arg[1].Dup()
		hay, ok1 = textOf(*h)
		needle, ok2 = textOf(*n)
		h.Close()
		n.Close()
	}
	if !ok1 || !ok2 {
		ctx.ResultError(sqlite3.NOMEM)
		return
	}
	pos := 1
	if len(needle) > 0 {
		steps := 0
		for len(needle) <= len(hay) && !bytes.HasPrefix(hay, needle) {
			if c.budgetSpent(&steps, len(needle)) {
				ctx.ResultError(sqlite3.INTERRUPT)
				return
			}
			pos++
			hay = hay[1:]
			for isText && len(hay) > 0 && hay[0]&0xc0 == 0x80 {
				hay = hay[1:]
			}
		}
		if len(needle) > len(hay) {
			pos = 0
		}
	}
	ctx.ResultInt(pos)
}

// replace is SQLite's replaceFunc.
func (c *conn) replace(ctx sqlite3.Context, arg ...sqlite3.Value) {
	defer outOfMemory(ctx)
	if arg[0].Type() == sqlite3.NULL || arg[1].Type() == sqlite3.NULL {
		ctx.ResultNull()
		return
	}
	b, ok1 := textOf(arg[0])
	pattern, ok2 := textOf(arg[1])
	if !ok1 || !ok2 {
		ctx.ResultError(sqlite3.NOMEM)
		return
	}
	str := string(b)
	if len(pattern) == 0 || pattern[0] == 0 {
		ctx.ResultText(str)
		return
	}
	if arg[2].Type() == sqlite3.NULL {
		ctx.ResultNull()
		return
	}
	r, ok := textOf(arg[2])
	if !ok {
		ctx.ResultError(sqlite3.NOMEM)
		return
	}
	rep := string(r)
	limit := ctx.Conn().Limit(sqlite3.LIMIT_LENGTH, -1)
	var out []byte
	steps := 0
	last := -1 // no match yet
	for i := 0; i+len(pattern) <= len(str); i++ {
		if c.budgetSpent(&steps, len(pattern)) {
			ctx.ResultError(sqlite3.INTERRUPT)
			return
		}
		if str[i] != pattern[0] || str[i:i+len(pattern)] != string(pattern) {
			continue
		}
		out = append(out, str[max(last, 0):i]...)
		out = append(out, rep...)
		if len(out)+len(str)-i-len(pattern) > limit {
			ctx.ResultError(sqlite3.TOOBIG)
			return
		}
		last = i + len(pattern)
		i = last - 1
	}
	if last < 0 {
		ctx.ResultText(str)
		return
	}
	ctx.ResultRawText(append(out, str[last:]...))
}

// trim is SQLite's trimFunc with a set of characters: mode 1 trims the
// left, 2 the right, 3 both.
func (c *conn) trim(ctx sqlite3.Context, mode int, arg []sqlite3.Value) {
	defer outOfMemory(ctx)
	if arg[0].Type() == sqlite3.NULL || arg[1].Type() == sqlite3.NULL {
		ctx.ResultNull()
		return
	}
	in, ok1 := textOf(arg[0])
	set, ok2 := textOf(arg[1])
	if !ok1 || !ok2 {
		ctx.ResultError(sqlite3.NOMEM)
		return
	}
	if i := bytes.IndexByte(set, 0); i >= 0 {
		set = set[:i] // SQLite reads the set up to its first NUL
	}
	// match walks the set's characters in order, as SQLite does, and
	// returns the length of the first that at gives. It reads them from
	// the set each time: a list of them took 24 bytes of Go heap per
	// character (hundreds of MB for a set of a few MiB), which SQLite's
	// heap limit does not see.
	steps := 0
	match := func(at func(n int) []byte) (int, bool) {
		for z := 0; z < len(set); {
			start := z
			z++
			if set[start] >= 0xc0 {
				for z < len(set) && set[z]&0xc0 == 0x80 {
					z++
				}
			}
			ch := set[start:z]
			if c.budgetSpent(&steps, len(ch)) {
				return -1, false
			}
			if p := at(len(ch)); p != nil && bytes.Equal(p, ch) {
				return len(ch), true
			}
		}
		return 0, false
	}
	if len(set) > 0 && mode&1 != 0 {
		for len(in) > 0 {
			n, ok := match(func(n int) []byte {
				if n > len(in) {
					return nil
				}
				return in[:n]
			})
			if n < 0 {
				ctx.ResultError(sqlite3.INTERRUPT)
				return
			}
			if !ok {
				break
			}
			in = in[n:]
		}
	}
	if len(set) > 0 && mode&2 != 0 {
		for len(in) > 0 {
			n, ok := match(func(n int) []byte {
				if n > len(in) {
					return nil
				}
				return in[len(in)-n:]
			})
			if n < 0 {
				ctx.ResultError(sqlite3.INTERRUPT)
				return
			}
			if !ok {
				break
			}
			in = in[:len(in)-n]
		}
	}
	ctx.ResultRawText(in)
}

// textOf returns a copy of v as text, and false when SQLite ran out of
// memory making it.
func textOf(v sqlite3.Value) ([]byte, bool) {
	b := v.RawText()
	return bytes.Clone(b), b != nil
}

// outOfMemory, deferred, turns the driver's panic when SQLite's heap is
// full (making a result) into SQLite's own out-of-memory error of the
// function, before the panic unwinds through SQLite.
func outOfMemory(ctx sqlite3.Context) {
	if r := recover(); r != nil {
		if !isOutOfMemory(r) {
			panic(r)
		}
		ctx.ResultError(sqlite3.NOMEM)
	}
}
