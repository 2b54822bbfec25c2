package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), t.TempDir(), &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"inserted ids: [1 2]",
		"refused: invalid_column_value",
		"row: apple 3",
		"row: pear 1",
		"export: 2 rows",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
