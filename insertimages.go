package projectdata

import (
	"cmp"
	"slices"
	"sync"

	"github.com/pkg/errors"
)

// The row images of an insert (its change-log records, see logInsert)
// are encoded before the writer, with the early plan (Store.insert): an
// image depends only on the table and the row's values, but for the row's
// key, which SQLite may assign. The writer, whose work is serial for every
// write of a project, only splices each key into its image and writes the
// record: with 1,000-row batches from 16 clients, encoding the images in
// the writer cost a fifth of its time, which was the change log's cost in
// throughput. A large insert's images are encoded in a goroutine of their
// own, while the writer inserts its rows; the buffers are pooled.

// insertImages are the row images of an insert plan, encoded but for the
// rows' keys, and the buffer of its records. They come from a pool and go
// back to it once the insert is done (release).
type insertImages struct {
	head []byte // the start of a record of the table's images (appendImageHead)
	buf  []byte // the images, one after the other
	// Row r's image is buf[start:offs[2r+1]], start being offs[2r-1] (0
	// for the first), with the row's key spliced in at offs[2r] (-1 when
	// the table has no key column).
	offs []int
	rec  []byte // the record the writer makes of them (logInsert)
}

// imageBuffers pools insertImages, so that inserts reuse their buffers.
var imageBuffers = sync.Pool{New: func() any { return new(insertImages) }}

// maxPooledImageBytes is the largest buffer an insertImages goes back to
// the pool with: a large insert's are left to the garbage collector.
const maxPooledImageBytes = 1 << 20

// newImages returns empty images from the pool.
func newImages() *insertImages {
	return imageBuffers.Get().(*insertImages)
}

// release returns im to the pool, emptied.
func (im *insertImages) release() {
	keep := func(b []byte) []byte {
		if cap(b) > maxPooledImageBytes {
			return nil
		}
		return b[:0]
	}
	offs := im.offs[:0]
	if cap(offs)*8 > maxPooledImageBytes {
		offs = nil
	}
	*im = insertImages{buf: keep(im.buf), offs: offs, rec: keep(im.rec)}
	imageBuffers.Put(im)
}

// tableImages are the parts of a table's row images that depend on the
// table alone, encoded once per *tableInfo (a reloaded registry has new
// ones, so a schema change never meets stale parts).
type tableImages struct {
	head     []byte   // appendImageHead(t)
	defaults [][]byte // by column: its default value, encoded
	err      error    // a stored default that does not convert
}

// imageParts returns the encoded parts of t's row images.
func (t *tableInfo) imageParts() (*tableImages, error) {
	if ti := t.images.Load(); ti != nil {
		return ti, ti.err
	}
	ti := &tableImages{head: appendImageHead(nil, t), defaults: make([][]byte, len(t.columns))}
	for i, col := range t.columns {
		d, err := colType(col.Type).convert(col.DefaultValue)
		if err != nil {
			ti.err = errors.Wrapf(err, "stored default of column %q", col.Name)
			break
		}
		ti.defaults[i] = appendJSONValue(nil, d)
	}
	t.images.Store(ti) // goroutines racing here store equal parts
	return ti, ti.err
}

// encodeImages encodes into im the row images of the plan's rows, but for
// their keys: each row as it will be stored, the given values (converted
// as they are bound), the columns' defaults for the others. It reuses
// im's buffers.
func (pl *insertPlan) encodeImages(im *insertImages) error {
	t := pl.t
	parts, err := t.imageParts()
	if err != nil {
		return err
	}
	n := len(pl.shapes)
	b, offs := im.buf[:0], im.offs[:0]
	if need := n * len(t.columns) * imageBytesPerValue; cap(b) < need {
		b = make([]byte, 0, need)
	}
	if cap(offs) < 2*n {
		offs = make([]int, 0, 2*n)
	}
	for r, sh := range pl.shapes {
		args := pl.args[pl.starts[r]:pl.starts[r+1]]
		b = append(b, '[')
		hole := -1
		for i, col := range t.columns {
			if i > 0 {
				b = append(b, ',')
			}
			switch j := sh.byColumn[i]; {
			case col == t.pk:
				hole = len(b)
			case j >= 0:
				b = appendSQLValue(b, args[j])
			default:
				b = append(b, parts.defaults[i]...)
			}
		}
		b = append(b, ']')
		offs = append(offs, hole, len(b))
	}
	im.head, im.buf, im.offs = parts.head, b, offs
	return nil
}

// concurrentImageRows is the fewest rows whose images an early plan
// encodes in a goroutine of its own, while the writer inserts them (with a
// second core, a single client's large inserts then wait for neither);
// fewer take less time to encode than to start the goroutine.
const concurrentImageRows = 32

// encodeEarly encodes the plan's images, into pl.images, before the
// writer; on error it leaves them nil, for the writer to encode (and fail).
func (pl *insertPlan) encodeEarly() {
	im := newImages()
	if pl.encodeImages(im) != nil {
		im.release()
		return
	}
	pl.images = im
}

// encodeImagesConcurrently is encodeEarly in a goroutine of its own,
// which closes pl.imagesDone when done. A panic leaves the images nil,
// for the writer to encode (and meet the panic there, where it is
// recovered and reported).
func (pl *insertPlan) encodeImagesConcurrently() {
	done := make(chan struct{})
	pl.imagesDone = done
	go func() {
		defer close(done)
		defer func() { _ = recover() }()
		pl.encodeEarly()
	}()
}

// waitImages waits for the images encoded concurrently, if they are.
func (pl *insertPlan) waitImages() {
	if pl.imagesDone != nil {
		<-pl.imagesDone
	}
}

// releaseImages returns the plan's images to the pool, once the insert is
// done with them.
func (pl *insertPlan) releaseImages() {
	pl.waitImages()
	if pl.images != nil {
		pl.images.release()
		pl.images = nil
	}
}

// imageBytesPerValue is a guess of the bytes of one value of an image,
// for sizing the buffer of an insert's images once.
const imageBytesPerValue = 8

// columnArgs returns, for each column of t, its argument in the rows of
// a shape of columns cols (ordered by id, as a plan orders a row's
// values), or -1.
func columnArgs(t *tableInfo, cols []*columnInfo) []int {
	pos := make([]int, len(t.columns))
	for i, col := range t.columns {
		j, found := slices.BinarySearchFunc(cols, col.ID, func(c *columnInfo, id int64) int { return cmp.Compare(c.ID, id) })
		if !found || cols[j] != col {
			j = -1
		}
		pos[i] = j
	}
	return pos
}

// appendImage appends the image of row r with its key.
func (im *insertImages) appendImage(b []byte, r int, key any) []byte {
	start := 0
	if r > 0 {
		start = im.offs[2*r-1]
	}
	if hole := im.offs[2*r]; hole >= 0 {
		b = append(b, im.buf[start:hole]...)
		b = appendJSONValue(b, key)
		start = hole
	}
	return append(b, im.buf[start:im.offs[2*r+1]]...)
}
