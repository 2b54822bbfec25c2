package projectdata

import (
	"testing"

	"github.com/matryer/is"
)

func TestLRU(t *testing.T) {
	all := func(int) bool { return true }
	t.Run("TrimsLeastRecentlyUsedFirst", func(t *testing.T) {
		is := is.New(t)
		l := newLRU[int]()
		for i, k := range []string{"a", "b", "c", "d"} {
			l.add(k, i)
		}
		_, ok := l.get("a") // a is now the most recently used
		is.True(ok)
		is.Equal(l.trim(2, all), []int{1, 2}) // b, then c
		is.Equal(l.len(), 2)
		_, ok = l.get("b")
		is.True(!ok)
		is.Equal(l.drain(), []int{0, 3}) // a, d: most recently used first
	})
	t.Run("TrimKeepsWhatIsNotEvictable", func(t *testing.T) {
		is := is.New(t)
		l := newLRU[int]()
		for i, k := range []string{"a", "b", "c"} {
			l.add(k, i)
		}
		odd := func(v int) bool { return v%2 == 1 }
		is.Equal(l.trim(1, odd), []int{1}) // a (0) and c (2) stay, over the bound
		is.Equal(l.len(), 2)
		is.Equal(l.trim(0, func(int) bool { return false }), []int(nil))
	})
	t.Run("AddReplacesAndRefreshes", func(t *testing.T) {
		is := is.New(t)
		l := newLRU[int]()
		l.add("a", 1)
		l.add("b", 2)
		l.add("a", 3)
		is.Equal(l.len(), 2)
		is.Equal(l.trim(1, all), []int{2})
		v, ok := l.get("a")
		is.True(ok)
		is.Equal(v, 3)
	})
	t.Run("RemoveIfOnlyTheSameValue", func(t *testing.T) {
		is := is.New(t)
		l := newLRU[int]()
		l.add("a", 1)
		is.True(!l.removeIf("a", func(v int) bool { return v == 2 }))
		is.True(!l.removeIf("b", func(int) bool { return true }))
		is.True(l.removeIf("a", func(v int) bool { return v == 1 }))
		is.Equal(l.len(), 0)
		_, ok := l.get("a")
		is.True(!ok)
	})
	t.Run("DrainEmpties", func(t *testing.T) {
		is := is.New(t)
		l := newLRU[int]()
		l.add("a", 1)
		is.Equal(l.drain(), []int{1})
		is.Equal(l.len(), 0)
		is.Equal(l.drain(), []int{})
		l.add("a", 2) // usable again
		is.Equal(l.len(), 1)
	})
}
