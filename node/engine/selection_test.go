package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"testing"

	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/search"
)

// selectedIDs reads the _ids of a selection's docs, checking that Total
// counts them.
func selectedIDs(t *testing.T, r *Reader, sel *Selection) map[string]bool {
	t.Helper()
	if len(sel.Bits) != len(r.Leaves()) {
		t.Fatalf("%d bitsets for %d leaves", len(sel.Bits), len(r.Leaves()))
	}
	ids := map[string]bool{}
	var sd index.StoredDoc
	for li, b := range sel.Bits {
		for d := b.NextSetBit(0); d != index.NoMoreDocs; d = b.NextSetBit(d + 1) {
			if err := r.Document(li, d, &sd); err != nil {
				t.Fatal(err)
			}
			if ids[string(sd.ID)] {
				t.Fatalf("doc %s selected twice", sd.ID)
			}
			ids[string(sd.ID)] = true
		}
	}
	if int64(len(ids)) != sel.Total {
		t.Fatalf("Total %d for %d selected docs", sel.Total, len(ids))
	}
	return ids
}

func TestReaderSelect(t *testing.T) {
	ctx := context.Background()
	e := openTestEngine(t, Options{RefreshInterval: -1})
	index := func(i int, word string) {
		t.Helper()
		if _, err := e.Index(ctx, []byte(fmt.Sprintf("d%03d", i)), fmt.Appendf(nil, `{"title":"doc %s","n":%d}`, word, i)); err != nil {
			t.Fatal(err)
		}
	}
	parity := func(i int) string { return map[bool]string{true: "even", false: "odd"}[i%2 == 0] }
	// live: id -> the word its current version holds.
	live := map[string]string{}
	for i := range 300 {
		index(i, parity(i))
		live[fmt.Sprintf("d%03d", i)] = parity(i)
	}
	if _, err := e.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	// A second segment: deletes in the first, and updates that flip the
	// word (the old version is deleted, the new one elsewhere).
	for i := 0; i < 300; i += 7 {
		id := fmt.Sprintf("d%03d", i)
		if _, err := e.Delete(ctx, []byte(id)); err != nil {
			t.Fatal(err)
		}
		delete(live, id)
	}
	for i := 3; i < 300; i += 10 {
		if i%7 == 0 {
			continue
		}
		index(i, "flipped")
		live[fmt.Sprintf("d%03d", i)] = "flipped"
	}
	if _, err := e.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	r := e.Acquire()
	defer r.Release()
	if len(r.Leaves()) < 2 {
		t.Fatalf("%d leaves, want deletes across at least 2", len(r.Leaves()))
	}
	// Deletes and updates after the reader was opened are not its business.
	for _, id := range []string{"d001", "d002", "d003"} {
		if _, err := e.Delete(ctx, []byte(id)); err != nil {
			t.Fatal(err)
		}
	}
	index(5, "even")
	if _, err := e.Refresh(ctx); err != nil {
		t.Fatal(err)
	}

	term := func(w string) search.Query { return &search.TermQuery{Field: "title", Term: []byte(w)} }
	want := func(q string, s Slice) map[string]bool {
		out := map[string]bool{}
		for id, w := range live {
			if (q == "" || w == q) && s.Contains([]byte(id)) {
				out[id] = true
			}
		}
		return out
	}
	for _, tc := range []struct {
		query string // "" for no query
		max   int
	}{
		{"", 0}, {"", 1}, {"", 2}, {"", 3}, {"", 7},
		{"even", 0}, {"odd", 2}, {"flipped", 3}, {"nothing", 2},
	} {
		t.Run(tc.query+"/"+strconv.Itoa(tc.max), func(t *testing.T) {
			var q search.Query
			if tc.query != "" {
				q = term(tc.query)
			}
			union := map[string]bool{}
			for id := range max(tc.max, 1) {
				s := Slice{ID: id, Max: tc.max}
				sel, err := r.Select(ctx, q, s)
				if err != nil {
					t.Fatal(err)
				}
				got := selectedIDs(t, r, sel)
				if w := want(tc.query, s); !maps.Equal(got, w) {
					t.Fatalf("slice %d/%d: %d docs, want %d: %v", id, tc.max, len(got), len(w), diffIDs(got, w))
				}
				for id := range got {
					if union[id] {
						t.Fatalf("doc %s in two slices", id)
					}
					union[id] = true
				}
				if tc.query == "" && tc.max == 7 && len(got) < len(live)/7/2 {
					t.Errorf("slice %d/%d is lopsided: %d docs", id, tc.max, len(got))
				}
			}
			if w := want(tc.query, Slice{}); !maps.Equal(union, w) {
				t.Fatalf("union of the slices: %d docs, want %d", len(union), len(w))
			}
		})
	}
	for _, s := range []Slice{{ID: -1, Max: 2}, {ID: 2, Max: 2}, {ID: 1, Max: 1}, {ID: 1}} {
		if _, err := r.Select(ctx, nil, s); !errors.Is(err, search.ErrInvalidQuery) {
			t.Errorf("slice %+v: %v, want ErrInvalidQuery", s, err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := r.Select(cctx, term("even"), Slice{ID: 0, Max: 2}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func diffIDs(got, want map[string]bool) []string {
	var d []string
	for id := range got {
		if !want[id] {
			d = append(d, "+"+id)
		}
	}
	for id := range want {
		if !got[id] {
			d = append(d, "-"+id)
		}
	}
	slices.Sort(d)
	return d
}
