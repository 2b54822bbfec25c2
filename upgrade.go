package projectdata

import (
	"strconv"

	"github.com/ncruces/go-sqlite3"
	"github.com/pkg/errors"
)

// Upgrades of the stored data that SQL alone cannot make: migrateTo runs
// migrationCode[v] in the transaction of control schema version v, after
// migrations[v-1].
var migrationCode = map[int]func(c *conn) error{
	8: canonicalDatetimes,
}

// canonicalDatetimesSchema is control schema version 8; its work is
// canonicalDatetimes's.
const canonicalDatetimesSchema = `-- DATETIME values in the service's one form (canonicalDatetimes)`

// canonicalDatetimeGlob matches the service's one form of a DATETIME value
// (timeLayout); the values it does not match are those to look at.
const canonicalDatetimeGlob = `[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z`

// canonicalDatetimeBatch is how many values canonicalDatetimes reads at a
// time.
const canonicalDatetimeBatch = 1000

// canonicalDatetimes rewrites the DATETIME values and defaults of every
// application table into the form every release since the first stores
// (RFC 3339 UTC to the millisecond): the first release (control schema
// version 1) stored them as written ("2026-01-02", "2026-01-02
// 10:00:00+02:00"), so that a where value, which this release compares in
// that form, an order or a primary key missed them. Each value keeps its
// instant. A value this release refuses (finer than the millisecond) stays
// as written, as does one whose rewrite a unique column refuses (another
// row holds the same instant in the one form): nothing is lost. A table
// whose DATETIME default is not in the one form is rebuilt with it (its
// rows, indexes and column ids kept), so that rows inserted from now on
// get it in that form.
//
// The rewrites are not logged as changes: the instants are those the log
// holds (in the form they were written), and a database of the first
// release has no log to add them to.
func canonicalDatetimes(c *conn) error {
	sc, err := loadSchema(c)
	if err != nil {
		return err
	}
	rebuilt := false
	for _, t := range sc.tables {
		staleDefault := false
		for _, col := range t.columns {
			if col.Type != TypeDatetime {
				continue
			}
			if err := canonicalColumn(c, t, col); err != nil {
				return errors.WithMessagef(err, "DATETIME values of column %q of table %q", col.Name, t.Name)
			}
			if s, ok := col.DefaultValue.(string); ok {
				if v, err := colType(TypeDatetime).convert(s); err == nil && v != s {
					staleDefault = true
				}
			}
		}
		if !staleDefault {
			continue
		}
		specs, err := t.specs()
		if err != nil { // a default this release refuses: kept as written
			continue
		}
		for i, col := range t.columns {
			if col.Type != TypeDatetime {
				continue
			}
			def, err := defaultJSON(specs[i].Default)
			if err != nil {
				return err
			}
			if err := c.exec(`UPDATE _pd_columns SET default_value = ? WHERE id = ?`, def, col.ID); err != nil {
				return err
			}
		}
		if err := rebuildTable(c, t, specs); err != nil {
			return errors.WithMessagef(err, "DATETIME default of table %q", t.Name)
		}
		rebuilt = true
	}
	if !rebuilt {
		return nil
	}
	return c.exec(`UPDATE _pd_registry SET version = version + 1 WHERE id = 1`)
}

// canonicalColumn rewrites the values of a DATETIME column (see
// canonicalDatetimes), reading them canonicalDatetimeBatch at a time in
// the order of the row's rowid (or primary key, when columns shadow every
// name of the rowid).
func canonicalColumn(c *conn, t *tableInfo, col *columnInfo) error {
	key := t.rowidRef()
	if key == "" {
		key = t.pk.quoted
	}
	sel := `SELECT ` + key + `, ` + col.quoted + ` FROM ` + t.quoted + `
		WHERE typeof(` + col.quoted + `) = 'text' AND ` + col.quoted + ` NOT GLOB '` + canonicalDatetimeGlob + `'`
	page := ` ORDER BY ` + key + ` LIMIT ` + strconv.Itoa(canonicalDatetimeBatch)
	upd := `UPDATE ` + t.quoted + ` SET ` + col.quoted + ` = ? WHERE ` + key + ` = ?`
	type value struct {
		key  any
		text string
	}
	var batch []value
	for {
		var err error
		read := func(st *sqlite3.Stmt) error {
			batch = append(batch, value{columnValue(st, 0), st.ColumnText(1)})
			return nil
		}
		if len(batch) == 0 {
			err = c.query(sel+page, nil, read)
		} else {
			after := batch[len(batch)-1].key
			batch = batch[:0]
			err = c.query(sel+` AND `+key+` > ?`+page, []any{after}, read)
		}
		if err != nil {
			return err
		}
		for _, v := range batch {
			canonical, err := colType(TypeDatetime).convert(v.text)
			if err != nil || canonical == v.text {
				continue
			}
			err = c.exec(upd, canonical, v.key)
			if errors.Is(err, sqlite3.CONSTRAINT_UNIQUE) || errors.Is(err, sqlite3.CONSTRAINT_PRIMARYKEY) {
				continue
			}
			if err != nil {
				return err
			}
		}
		if len(batch) < canonicalDatetimeBatch {
			return nil
		}
	}
}
