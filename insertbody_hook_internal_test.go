package projectdata

import (
	"io"
	"unsafe"
)

// DecodeInsertBody is InsertJSON's decoder as Rows, for the external fuzz
// test that checks it against DecodeRows and encoding/json.
func DecodeInsertBody(r io.Reader, maxRows int) ([]Row, error) {
	if maxRows <= 0 {
		maxRows = defaultMaxInsertRows
	}
	js := newJSONStream(r)
	defer js.release()
	ib, err := js.insertBody(maxRows)
	if ib != nil {
		defer ib.release()
	}
	if err != nil {
		return nil, jsonError(err)
	}
	return ib.rows(), js.end()
}

// The cells of a body are 32 bytes each, which maxKeptCells counts on.
var _ [32]struct{} = [unsafe.Sizeof(bodyCell{})]struct{}{}
