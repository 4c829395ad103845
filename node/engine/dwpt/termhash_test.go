package dwpt

import (
	"bytes"
	"fmt"
	"testing"
)

// TestTermHashTellsTermsApart: terms sharing prefixes, containing zero
// bytes or differing only in length get distinct ids that add and find
// return again, and their bytes, across several rehashes.
func TestTermHashTellsTermsApart(t *testing.T) {
	terms := []string{"", "a", "ab", "abcdefg", "abcdefgh", "abcdefgi", "abcdefghijklmnop",
		"\x00", "\x00\x00", "a\x00", "\x00a", "\xff\xff\xff\xff\xff\xff\xff", "\xff\xff\xff\xff\xff\xff\xff\xff"}
	for i := range 2000 { // enough to rehash several times
		terms = append(terms, fmt.Sprintf("t%d", i), fmt.Sprintf("long-term-%06d", i))
	}
	var pool bytePool
	var h termHash
	h.init(&pool)
	defer h.release()
	ids := map[string]int32{}
	for _, term := range terms {
		id, isNew := h.add([]byte(term))
		if !isNew {
			t.Fatalf("%q reported as known on first add (id %d)", term, id)
		}
		ids[term] = id
	}
	for _, term := range terms {
		want := ids[term]
		if id, isNew := h.add([]byte(term)); isNew || id != want {
			t.Fatalf("re-adding %q: id %d new %v, want %d", term, id, isNew, want)
		}
		if id := h.find([]byte(term)); id != want {
			t.Fatalf("find %q = %d, want %d", term, id, want)
		}
		if got := h.term(want); !bytes.Equal(got, []byte(term)) {
			t.Fatalf("term(%d) = %q, want %q", want, got, term)
		}
	}
	for _, missing := range []string{"abc", "abcdefgj", "abcdefghijklmnoq", "\x00\x00\x00", "t2000"} {
		if id := h.find([]byte(missing)); id != -1 {
			t.Fatalf("find %q = %d, want -1", missing, id)
		}
	}
}
