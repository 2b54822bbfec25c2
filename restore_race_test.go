package projectdata_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/internal/pdtest"
)

// TestConcurrentRestoresOfOneSlug: restores of one slug at once, while
// requests to the slug run: one restore wins, the others are
// ErrProjectExists, requests see no project or the whole restored one,
// and the data folder holds the project and nothing else.
func TestConcurrentRestoresOfOneSlug(t *testing.T) {
	is := is.New(t)
	src, _ := pdtest.NewProject(t, nil)
	_, _, err := src.CreateTable(ctx, "acme", projectdata.TableDef{Name: "notes", Columns: []projectdata.ColumnDef{{Name: "body"}}})
	is.NoErr(err)
	rows := make([]projectdata.Row, 500)
	for i := range rows {
		rows[i] = projectdata.Row{"body": i}
	}
	_, err = src.Insert(ctx, "acme", "notes", rows)
	is.NoErr(err)
	snapshot := newestSnapshot(t, src)

	for round := range 3 {
		s, dir := pdtest.Open(t, nil)
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			restored int
			stop     = make(chan struct{})
			reqErr   error
		)
		wg.Go(func() { // requests to the slug all along
			for {
				select {
				case <-stop:
					return
				default:
				}
				l, err := s.ListRecords(ctx, "copy", "notes", projectdata.ListOptions{Limit: 1})
				switch {
				case projectdata.ErrorCode(err) == projectdata.ErrProjectNotFound:
				case err != nil:
					reqErr = err
					return
				case *l.Total != 500:
					reqErr = errors.New("a partial project was served")
					return
				}
			}
		})
		var restores sync.WaitGroup
		for range 4 {
			restores.Go(func() {
				_, err := s.RestoreProject(ctx, "copy", snapshot)
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					restored++
					return
				}
				if projectdata.ErrorCode(err) != projectdata.ErrProjectExists {
					t.Errorf("round %d: restore: %v", round, err)
				}
			})
		}
		restores.Wait()
		close(stop)
		wg.Wait()
		is.NoErr(reqErr)
		is.Equal(restored, 1)
		is.Equal(dataFolder(t, dir), []string{"copy"})
		pdtest.CheckRowCounts(t, dir, "copy")
		l, err := s.ListRecords(ctx, "copy", "notes", projectdata.ListOptions{Limit: 1})
		is.NoErr(err)
		is.Equal(*l.Total, int64(500))
	}
}
