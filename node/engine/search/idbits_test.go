package search

import (
	"fmt"
	"testing"

	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/index"
)

func TestIDBits(t *testing.T) {
	docs := make([]document.Document, 300)
	for i := range docs {
		docs[i].ID = fmt.Appendf(nil, "doc-%d", i)
		docs[i].Source = []byte(`{}`)
	}
	r := dwptBuilder(t, docs)
	// Three disjoint slices by the last digit's residue must cover every doc once.
	seen := make([]int, len(docs))
	for slice := 0; slice < 3; slice++ {
		b := IDBits(r, func(id []byte) bool { return int(id[len(id)-1])%3 == slice })
		for d := b.NextSetBit(0); d != index.NoMoreDocs; d = b.NextSetBit(d + 1) {
			seen[d]++
			if id := docs[d].ID; int(id[len(id)-1])%3 != slice {
				t.Fatalf("slice %d has doc %s", slice, id)
			}
		}
	}
	for d, n := range seen {
		if n != 1 {
			t.Fatalf("doc %d selected %d times", d, n)
		}
	}
	if b := IDBits(r, func([]byte) bool { return false }); b.Cardinality() != 0 || b.Len() != len(docs) {
		t.Fatalf("keep-nothing: %d of %d", b.Cardinality(), b.Len())
	}
}
