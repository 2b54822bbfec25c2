package projectdata_test

import (
	"context"
	"iter"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/client"
	"github.com/projectdata/projectdata/projectdatatest"
)

// The Go names the contract fixes (CONTRACT §1, §11, §12, §15), with the
// signatures applications and checks compile against.
var (
	_ func(string, *projectdata.Options) (*projectdata.Store, error)                                                           = projectdata.Open
	_ func(*projectdata.Store) error                                                                                           = (*projectdata.Store).Close
	_ func(*projectdata.Store, context.Context, string, string) (projectdata.Project, projectdata.CreatedToken, error)         = (*projectdata.Store).CreateProject
	_ func(*projectdata.Store, context.Context, string, projectdata.TableDef) (projectdata.Table, []projectdata.Column, error) = (*projectdata.Store).CreateTable
	_ func(*projectdata.Store, context.Context, string, string, []projectdata.Row) (projectdata.InsertResult, error)           = (*projectdata.Store).Insert
	_ func(*projectdata.Store, context.Context, string, string, any) (projectdata.Row, error)                                  = (*projectdata.Store).GetRecord
	_ func(*projectdata.Store, context.Context, string, string, projectdata.ListOptions) iter.Seq2[projectdata.Row, error]     = (*projectdata.Store).Rows
	_ func(*projectdata.Store, context.Context, string, string, any, projectdata.Row) (projectdata.Row, error)                 = (*projectdata.Store).UpdateRecord
	_ func(*projectdata.Store, context.Context, string, int64) iter.Seq2[projectdata.Change, error]                            = (*projectdata.Store).Changes
	_ func(error) projectdata.Code                                                                                             = projectdata.ErrorCode
	_ func(string, string, *client.Options) *client.Client                                                                     = client.New
	_ func(testing.TB) *projectdata.Store                                                                                      = projectdatatest.NewStore
	_ func(testing.TB, *projectdata.Store) (string, string)                                                                    = projectdatatest.NewProject
	_ map[string]any                                                                                                           = projectdata.Row{}
	_ string                                                                                                                   = string(projectdata.ErrTableNotFound)
	_ error                                                                                                                    = projectdata.ErrWhereRequired
)

// TestContractGoNames uses the fixed types' fields as an application
// does: a column type read from input, a string, goes into ColumnDef.Type
// as it is (CONTRACT §1: ColumnDef{Name, Type string; Primary bool}).
func TestContractGoNames(t *testing.T) {
	is := is.New(t)
	s := projectdatatest.NewStore(t)
	slug, _ := projectdatatest.NewProject(t, s)
	var name, typ string = "qty", "integer" // read from input
	def := projectdata.TableDef{Name: "items", Columns: []projectdata.ColumnDef{{Name: name, Type: typ, Primary: false}}}
	var back string = def.Columns[0].Type
	is.Equal(back, "integer")
	ctx := context.Background() // in process, without a caller: no role applies
	_, cols, err := s.CreateTable(ctx, slug, def)
	is.NoErr(err)
	is.Equal(cols[1].Name, "qty")
	is.Equal(string(cols[1].Type), "INTEGER")
	res, err := s.Insert(ctx, slug, "items", []projectdata.Row{{"qty": 5}})
	is.NoErr(err)
	var ids []any = res.InsertedIDs
	row, err := s.GetRecord(ctx, slug, "items", "1") // the key or its string form
	is.NoErr(err)
	is.Equal(row["qty"], int64(5))
	is.Equal(len(ids), 1)

	var c projectdata.Change
	var _ int64 = c.ID
	var _, _ string = c.Table, c.Op
	var _ any = c.Key
	var _ projectdata.Row = c.Row
	var _ time.Time = c.At
	var tok projectdata.CreatedToken
	var _ string = tok.Token
	var o projectdata.ListOptions
	_, _, _, _, _, _, _ = o.Where, o.Order, o.Columns, o.Limit, o.After, o.Offset, o.Count
}
