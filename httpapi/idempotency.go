package httpapi

import (
	"crypto/sha256"
	"hash"
	"io"
	"net/http"

	"github.com/projectdata/projectdata"
)

// withIdempotency reads the request's Idempotency-Key header, if any, and
// hands it to the Store in the request's context with the request's
// fingerprint (method, path and body bytes, hashed as the handler reads
// the body) and the Idempotent-Replayed header to set on a replay. This is
// the one place for every route: the Store decides which operations store
// an answer (writes), which ignore the key (reads) and which refuse it
// (token creation).
func (h *Handler) withIdempotency(w http.ResponseWriter, r *http.Request) (*http.Request, error) {
	values := r.Header.Values("Idempotency-Key")
	if values == nil {
		return r, nil
	}
	if len(values) > 1 {
		return r, errorf(projectdata.ErrInvalidIdempotencyKey, "send one Idempotency-Key header")
	}
	key, err := projectdata.ParseIdempotencyKey(values[0])
	if err != nil {
		return r, err
	}
	body := &hashingBody{ReadCloser: r.Body, sum: sha256.New()}
	body.sum.Write([]byte(r.Method + "\x00" + r.URL.EscapedPath() + "\x00"))
	r2 := r.WithContext(projectdata.WithIdempotency(r.Context(), projectdata.Idempotency{
		Key: key,
		Fingerprint: func() []byte {
			// Hash what the handler left unread too, within the body limit.
			io.Copy(io.Discard, io.LimitReader(body, h.opts.MaxBodyBytes+1))
			return body.sum.Sum(nil)
		},
		OnReplay: func() { w.Header().Set("Idempotent-Replayed", "true") },
	}))
	r2.Body = body
	return r2, nil
}

// hashingBody is a request body that hashes the bytes read from it.
type hashingBody struct {
	io.ReadCloser
	sum hash.Hash
}

func (b *hashingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.sum.Write(p[:n])
	return n, err
}
