package httpapi

import (
	"context"
	"crypto/sha256"
	"hash"
	"io"
	"net/http"

	"github.com/projectdata/projectdata"
)

// withIdempotency reads the request's Idempotency-Key header, if any, and
// hands it to the Store in the returned context with the request's
// fingerprint (method, path and body bytes, hashed as the handler reads the
// body: the body to read is the one returned) and the Idempotent-Replayed
// header to set on a replay. Without the header it returns ctx and a nil
// body. This is the one place for every route: the Store decides which
// operations store an answer (writes), which ignore the key (reads) and
// which refuse it (token creation).
func (h *Handler) withIdempotency(ctx context.Context, w http.ResponseWriter, r *http.Request) (context.Context, io.ReadCloser, error) {
	values := r.Header.Values("Idempotency-Key")
	if values == nil {
		return ctx, nil, nil
	}
	if len(values) > 1 {
		return ctx, nil, errorf(projectdata.ErrInvalidIdempotencyKey, "send one Idempotency-Key header")
	}
	key, err := projectdata.ParseIdempotencyKey(values[0])
	if err != nil {
		return ctx, nil, err
	}
	ir := &idempotentRequest{ReadCloser: r.Body, sum: sha256.New(), w: w, maxBody: h.opts.MaxBodyBytes}
	path := r.URL.EscapedPath()
	ir.sum.Write(append(append(append(append(ir.scratch[:0], r.Method...), 0), path...), 0))
	return projectdata.WithIdempotency(ctx, projectdata.Idempotency{
		Key:         key,
		Fingerprint: ir.fingerprint,
		OnReplay:    ir.replayed,
	}), ir, nil
}

// idempotentRequest is the body of a request with an Idempotency-Key: it
// hashes the bytes read from it into the request's fingerprint.
type idempotentRequest struct {
	io.ReadCloser
	sum           hash.Hash
	w             http.ResponseWriter
	maxBody       int64
	read          int64     // the bytes read so far, hashed
	fingerprinted bool      // the Store took the fingerprint: the operation ran, or was answered
	scratch       [128]byte // the fingerprint's prefix, the first read of what is left, the sum
}

func (ir *idempotentRequest) Read(p []byte) (int, error) {
	n, err := ir.ReadCloser.Read(p)
	ir.sum.Write(p[:n])
	ir.read += int64(n)
	return n, err
}

// fingerprint hashes what the handler left unread too, up to the body
// limit and one byte, and returns the sum. Mostly nothing is left: one
// Read ends it. The bytes hashed are the whole body, or the first
// maxBody+1 bytes of a body past the limit, however many the handler read
// before it refused the body (which depends on how its bytes arrived): the
// same request has the same fingerprint.
func (ir *idempotentRequest) fingerprint() []byte {
	ir.fingerprinted = true
	if rest := ir.maxBody + 1 - ir.read; rest > 0 {
		if _, err := ir.Read(ir.scratch[:min(rest, int64(len(ir.scratch)))]); err == nil && ir.read <= ir.maxBody {
			io.CopyN(io.Discard, ir, ir.maxBody+1-ir.read)
		}
	}
	return ir.sum.Sum(ir.scratch[:0])
}

// replayed marks the response as a stored one.
func (ir *idempotentRequest) replayed() { ir.w.Header().Set("Idempotent-Replayed", "true") }
