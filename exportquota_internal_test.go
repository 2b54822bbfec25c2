package projectdata

import (
	"context"
	"testing"

	"github.com/matryer/is"
)

// TestExportChargesCannotPassTheQuotaTogether plays, step by step, the
// exports of one project that run at once: each read the manifests when
// it began, so only the bytes counted in memory keep them from passing
// Options.MaxExportBytes together, those of an export that ended with its
// manifest recorded after another began included.
func TestExportChargesCannotPassTheQuotaTogether(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s := itemsStore(t, &Options{MaxExportBytes: 100})
	err := s.withProject(ctx, "acme", OpCreateExport, func(p *project) error {
		a, err := s.beginExport(ctx, p)
		is.NoErr(err)
		b, err := s.beginExport(ctx, p) // began with a: neither sees the other's file
		is.NoErr(err)
		is.NoErr(a.grow(60))
		is.Equal(ErrorCode(b.grow(60)), ErrExportQuotaExceeded) // 120 > 100
		is.NoErr(b.grow(40))                                    // exactly at the bound
		_, err = s.beginExport(ctx, p)
		is.Equal(ErrorCode(err), ErrExportQuotaExceeded) // at the bound: refused at once
		b.end(false)                                     // b stopped: its 40 bytes are free again

		d, err := s.beginExport(ctx, p) // sees 60 bytes under way, no manifest
		is.NoErr(err)
		a.end(true) // a's manifest recorded after d read the manifests
		is.Equal(ErrorCode(d.grow(50)), ErrExportQuotaExceeded)
		is.NoErr(d.grow(40))
		d.end(false)
		d.end(true) // only the first end counts
		return nil
	})
	is.NoErr(err)
	is.Equal(len(s.exportUse.projects), 0) // no export under way: no account left
}
