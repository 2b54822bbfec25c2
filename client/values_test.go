package client_test

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	pd "github.com/projectdata/projectdata"
)

// TestTextIsSentAsIs: <, > and & travel as themselves, not as 6-byte
// escapes, so a row the Store takes fits the server's body limit (8 MiB):
// 3 MiB of < was 18 MiB of \u003c.
func TestTextIsSentAsIs(t *testing.T) {
	is := is.New(t)
	direct, remote, _ := pair(t, nil)
	big := strings.Repeat("<", 3<<20)
	for _, a := range []API{direct, remote} {
		_, _, err := a.CreateTable(ctx, "acme", pd.TableDef{Name: "t", Columns: []pd.ColumnDef{{Name: "v"}}})
		is.NoErr(err)
		_, err = a.Insert(ctx, "acme", "t", []pd.Row{{"v": big}, {"v": "a<b>&c"}})
		is.NoErr(err)
		list, err := a.ListRecords(ctx, "acme", "t", pd.ListOptions{Where: pd.Where{{Column: "v", Op: pd.WhereEq, Value: "a<b>&c"}}})
		is.NoErr(err)
		is.Equal(len(list.Rows), 1)
		row, err := a.GetRecord(ctx, "acme", "t", 1)
		is.NoErr(err)
		is.Equal(row["v"], big)
	}
}
