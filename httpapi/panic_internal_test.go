package httpapi

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/julienschmidt/httprouter"
	"github.com/matryer/is"

	"github.com/projectdata/projectdata/internal/pdtest"
)

func TestPanicAnswersWithEnvelopeAndHidesDetails(t *testing.T) {
	is := is.New(t)
	store, _ := pdtest.NewProject(t, nil)
	var logs bytes.Buffer
	h := New(store, &Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	h.router.GET("/boom", func(http.ResponseWriter, *http.Request, httprouter.Params) {
		panic("secret detail /var/lib/x")
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/boom", nil))
	is.Equal(rec.Code, 500)
	var env struct {
		OK    bool
		Error struct{ Code, Message string }
	}
	is.NoErr(json.Unmarshal(rec.Body.Bytes(), &env))
	is.Equal(env.Error.Code, "internal_error")
	is.True(!strings.Contains(env.Error.Message, "secret"))
	is.True(strings.Contains(logs.String(), "secret detail")) // logged for the operator
}

func TestAccessLogNeverHoldsTheToken(t *testing.T) {
	is := is.New(t)
	store, admin := pdtest.NewProject(t, nil)
	var logs bytes.Buffer
	h := New(store, &Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	req := httptest.NewRequest("GET", "/projects/acme", nil)
	req.Header.Set("Authorization", "Bearer "+admin)
	h.ServeHTTP(httptest.NewRecorder(), req)
	req = httptest.NewRequest("GET", "/projects/acme", nil)
	req.Header.Set("Authorization", "Bearer "+admin+"x")
	h.ServeHTTP(httptest.NewRecorder(), req)
	is.True(strings.Contains(logs.String(), `"status":200`))
	is.True(strings.Contains(logs.String(), `"status":401`))
	is.True(!strings.Contains(logs.String(), admin[4:]))
}
