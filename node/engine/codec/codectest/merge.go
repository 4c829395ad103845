package codectest

import (
	"bytes"
	"slices"

	"github.com/sluice-search/sluice/node/engine/index"
)

// Merge is the oracle of a segment merge: the live docs (nil live = all) of
// models concatenated in order and renumbered, fields unioned by name in
// order of first appearance, terms without live docs dropped, sorted doc
// values reduced to the values live docs use.
func Merge(models []*Model, lives []*index.FixedBitSet) *Model {
	out := &Model{}
	maps := make([][]int, len(models))
	for i, m := range models {
		maps[i] = make([]int, m.Docs)
		for d := 0; d < m.Docs; d++ {
			maps[i][d] = -1
			if lives[i] == nil || lives[i].Get(d) {
				maps[i][d] = out.Docs
				out.Stored = append(out.Stored, m.Stored[d])
				out.Docs++
			}
		}
	}
	byName := map[string]*Field{}
	for _, m := range models {
		for _, f := range m.Fields {
			if byName[f.Info.Name] == nil {
				info := f.Info
				info.Number = len(out.Fields)
				nf := &Field{Info: info}
				byName[info.Name] = nf
				out.Fields = append(out.Fields, nf)
			}
		}
	}
	for _, nf := range out.Fields {
		postings := map[string][]Posting{}
		for i, m := range models {
			f := m.byName[nf.Info.Name]
			if f == nil {
				continue
			}
			for _, t := range f.Terms {
				for _, p := range t.Postings {
					if nd := maps[i][p.Doc]; nd >= 0 {
						p.Doc = nd
						postings[string(t.Term)] = append(postings[string(t.Term)], p)
					}
				}
			}
			if f.Norms != nil && nf.Norms == nil {
				nf.Norms = make([]uint8, out.Docs)
			}
			if f.Numeric != nil && nf.Numeric == nil {
				nf.Numeric, nf.HasNumeric = make([]int64, out.Docs), make([]bool, out.Docs)
			}
			if f.SortedOrds != nil && nf.SortedOrds == nil {
				nf.SortedOrds = make([]int, out.Docs)
				for d := range nf.SortedOrds {
					nf.SortedOrds[d] = -1
				}
			}
		}
		for term, ps := range postings {
			nf.Terms = append(nf.Terms, Term{Term: []byte(term), Postings: ps})
		}
		var sortedVals [][]byte
		for i, m := range models {
			f := m.byName[nf.Info.Name]
			if f == nil {
				continue
			}
			for d, nd := range maps[i] {
				if nd < 0 {
					continue
				}
				if f.Norms != nil {
					nf.Norms[nd] = f.Norms[d]
				}
				if f.Numeric != nil {
					nf.Numeric[nd], nf.HasNumeric[nd] = f.Numeric[d], f.HasNumeric[d]
				}
				if f.SortedOrds != nil && f.SortedOrds[d] >= 0 {
					sortedVals = append(sortedVals, f.SortedValues[f.SortedOrds[d]])
				}
			}
		}
		if nf.SortedOrds != nil {
			slices.SortFunc(sortedVals, bytes.Compare)
			nf.SortedValues = slices.CompactFunc(sortedVals, bytes.Equal)
			for i, m := range models {
				f := m.byName[nf.Info.Name]
				if f == nil || f.SortedOrds == nil {
					continue
				}
				for d, nd := range maps[i] {
					if nd >= 0 && f.SortedOrds[d] >= 0 {
						nf.SortedOrds[nd], _ = slices.BinarySearchFunc(nf.SortedValues, f.SortedValues[f.SortedOrds[d]], bytes.Compare)
					}
				}
			}
		}
	}
	out.Finish()
	return out
}
