package client_test

import (
	"reflect"
	"testing"

	pd "github.com/projectdata/projectdata"
	"github.com/projectdata/projectdata/client"
)

// notOverHTTP are the Store's methods the Client does not have, and why.
var notOverHTTP = map[string]string{
	"CreateProject":        "projects are made by the embedding application (server project create)",
	"ListProjects":         "no route: a token belongs to one project",
	"RestoreProject":       "no route: server project restore",
	"RestoreProjectWith":   "no route: server project restore",
	"Authenticate":         "the server's use: the client sends its token",
	"Pin":                  "the server's use, around one request",
	"Stats":                "the server's use: GET /metrics",
	"AppendQueryJSON":      "the server's encoding of Query's answer",
	"AppendRecordJSON":     "the server's encoding of FindRecord's answer",
	"AppendRecordListJSON": "the server's encoding of ListRecords' answer",
	"DecodeRows":           "the server's decoding of an insert body",
	"RefuseIdempotent":     "the server's answer to a refused body",
	"Close":                "the Store's lifetime; a Client holds nothing to close",
	"Closed":               "the Store's lifetime",
	"OpenExport":           "returns an *os.File; the Client has DownloadExport",
}

// TestClientHasTheStoresMethods: for every operation of the Store, the
// Client has a method of the same name and signature (CONTRACT §15).
func TestClientHasTheStoresMethods(t *testing.T) {
	store, cl := reflect.TypeFor[*pd.Store](), reflect.TypeFor[*client.Client]()
	for name := range notOverHTTP {
		if _, ok := store.MethodByName(name); !ok {
			t.Errorf("notOverHTTP lists %s, which the Store does not have", name)
		}
		if _, ok := cl.MethodByName(name); ok {
			t.Errorf("notOverHTTP lists %s, which the Client has", name)
		}
	}
	for m := range store.Methods() {
		if _, skip := notOverHTTP[m.Name]; skip {
			continue
		}
		cm, ok := cl.MethodByName(m.Name)
		if !ok {
			t.Errorf("the Client has no %s %s", m.Name, m.Type)
			continue
		}
		if !sameSignature(m.Type, cm.Type) {
			t.Errorf("%s: the Store's is %s, the Client's %s", m.Name, m.Type, cm.Type)
		}
	}
}

// sameSignature compares two method types but their receivers.
func sameSignature(a, b reflect.Type) bool {
	if a.NumIn() != b.NumIn() || a.NumOut() != b.NumOut() || a.IsVariadic() != b.IsVariadic() {
		return false
	}
	for i := 1; i < a.NumIn(); i++ {
		if a.In(i) != b.In(i) {
			return false
		}
	}
	for i := range a.NumOut() {
		if a.Out(i) != b.Out(i) {
			return false
		}
	}
	return true
}
