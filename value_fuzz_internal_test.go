package projectdata

import (
	"testing"
	"time"
)

// FuzzDatetime: whatever text a DATETIME column takes (isoExtended and
// the layouts), it stores in the one timestamp form, to the millisecond
// in UTC, which the column takes again unchanged.
func FuzzDatetime(f *testing.F) {
	for _, s := range []string{
		"2024-01-01", "2024-01-01T12:00", "2024-01-01T12:00Z", "2024-01-01 05:30:00.123+05",
		"2024-01-01t12:00:00.25z", "2024-01-01T05:30:00-0130", "20240101", "20240101T0530",
		"20240101T053000.5+0100", "2024-01-01T10:00:00+24:00", "20240101T05300",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := colType(TypeDatetime).convertString(s)
		if err != nil {
			return
		}
		stored := v.(string)
		if _, err := time.Parse("2006-01-02T15:04:05.000Z", stored); err != nil {
			t.Fatalf("%q stored as %q: %v", s, stored, err)
		}
		if again, err := colType(TypeDatetime).convertString(stored); err != nil || again != stored {
			t.Fatalf("%q stored as %q, taken again as %v (%v)", s, stored, again, err)
		}
	})
}
