package codectest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sluice-search/sluice/node/engine/index"
)

// Check compares got with want (a model or any trusted LeafReader) through
// the whole read API: field infos; per field the statistics, term order,
// SeekExact/SeekCeil for present and absent terms, postings in layers (docs,
// +freqs, +positions) by full and partial iteration with random Advance
// targets, AdvanceShallow/BlockMax as upper bounds and, for every term,
// the competitive impacts of every block an AdvanceShallow walk visits
// (index.BlockImpactsEnum) against the model's; norms, doc values and
// stored fields.
func Check(t testing.TB, r *rand.Rand, want, got index.LeafReader) {
	t.Helper()
	if want.MaxDoc() != got.MaxDoc() {
		t.Fatalf("MaxDoc %d, want %d", got.MaxDoc(), want.MaxDoc())
	}
	wf, gf := want.FieldInfos(), got.FieldInfos()
	if wf.Len() != gf.Len() {
		t.Fatalf("%d fields, want %d", gf.Len(), wf.Len())
	}
	for _, name := range wf.Names() {
		w, g := wf.ByName(name), gf.ByName(name)
		if g == nil || w.Type != g.Type || w.IndexOptions != g.IndexOptions || w.HasNorms != g.HasNorms || w.DocValues != g.DocValues {
			t.Fatalf("field %q: info %+v, want %+v", name, g, w)
		}
		checkTerms(t, r, name, want, got)
		checkValues(t, name, want, got)
	}
	checkStored(t, r, want, got)
}

func checkTerms(t testing.TB, r *rand.Rand, field string, want, got index.LeafReader) {
	wt, gt := want.Terms(field), got.Terms(field)
	if (wt == nil) != (gt == nil) {
		t.Fatalf("field %q: Terms nil=%v, want nil=%v", field, gt == nil, wt == nil)
	}
	if wt == nil {
		return
	}
	if wt.Size() != gt.Size() || wt.DocCount() != gt.DocCount() || wt.SumDocFreq() != gt.SumDocFreq() ||
		wt.SumTotalTermFreq() != gt.SumTotalTermFreq() || wt.IndexOptions() != gt.IndexOptions() {
		t.Fatalf("field %q: stats size=%d docCount=%d sumDF=%d sumTTF=%d, want %d %d %d %d", field,
			gt.Size(), gt.DocCount(), gt.SumDocFreq(), gt.SumTotalTermFreq(),
			wt.Size(), wt.DocCount(), wt.SumDocFreq(), wt.SumTotalTermFreq())
	}
	opts := wt.IndexOptions()
	var norms index.NormsReader
	if nr := want.Norms(field); nr != nil {
		norms = nr
	}
	// Full iteration in lockstep, all terms, postings in layers.
	we, ge := wt.Iterator(), gt.Iterator()
	var terms [][]byte
	var reuse index.PostingsEnum
	var reuseImpacts index.ImpactsEnum
	for {
		wok, gok := we.Next(), ge.Next()
		if wok != gok {
			t.Fatalf("field %q: Next()=%v after %d terms, want %v", field, gok, len(terms), wok)
		}
		if !wok {
			break
		}
		if !bytes.Equal(we.Term(), ge.Term()) {
			t.Fatalf("field %q: term %q, want %q", field, ge.Term(), we.Term())
		}
		terms = append(terms, bytes.Clone(we.Term()))
		checkTermStats(t, field, we, ge)
		for _, flags := range layers(opts) {
			reuse = ge.Postings(reuse, flags)
			comparePostings(t, r, field, we.Term(), flags, we.Postings(nil, flags), reuse, false)
		}
		if r.IntN(4) == 0 {
			flags := layers(opts)[r.IntN(len(layers(opts)))]
			comparePostings(t, r, field, we.Term(), flags, we.Postings(nil, flags), ge.Postings(nil, flags), true)
		}
		gi := ge.Impacts(index.PostingsFreqs)
		if ir, ok := ge.(index.ImpactsReuser); ok && r.IntN(2) == 0 {
			// A recycled enum must read like a fresh one.
			reuseImpacts = ir.ReuseImpacts(reuseImpacts, index.PostingsFreqs)
			gi = reuseImpacts
		}
		checkImpacts(t, r, field, we.Term(), opts, norms, we.Postings(nil, index.PostingsFreqs), gi)
	}
	// Seeks: present terms, mutations of them (mostly absent), random bytes.
	we, ge = wt.Iterator(), gt.Iterator()
	for i := 0; i < 200 && len(terms) > 0; i++ {
		base := terms[r.IntN(len(terms))]
		target := base
		switch r.IntN(5) {
		case 1:
			target = append(bytes.Clone(base), byte(r.IntN(256)))
		case 2:
			if len(base) > 0 {
				target = base[:r.IntN(len(base))]
			}
		case 3:
			target = randTerm(r, "abcdez\x00\xff", 7)
		case 4:
			if len(base) > 0 {
				target = bytes.Clone(base)
				target[len(target)-1]++
			}
		}
		if r.IntN(2) == 0 {
			wok, gok := we.SeekExact(target), ge.SeekExact(target)
			if wok != gok {
				t.Fatalf("field %q: SeekExact(%q)=%v, want %v", field, target, gok, wok)
			}
			if !wok {
				continue
			}
		} else {
			ws, gs := we.SeekCeil(target), ge.SeekCeil(target)
			if ws != gs {
				t.Fatalf("field %q: SeekCeil(%q)=%v, want %v", field, target, gs, ws)
			}
			if ws == index.SeekEnd {
				continue
			}
		}
		if !bytes.Equal(we.Term(), ge.Term()) {
			t.Fatalf("field %q: seek(%q) on %q, want %q", field, target, ge.Term(), we.Term())
		}
		checkTermStats(t, field, we, ge)
		if r.IntN(3) == 0 {
			flags := layers(opts)[r.IntN(len(layers(opts)))]
			comparePostings(t, r, field, we.Term(), flags, we.Postings(nil, flags), ge.Postings(nil, flags), true)
		}
		// Next after a seek continues from the sought term.
		for k := r.IntN(3); k > 0; k-- {
			wok, gok := we.Next(), ge.Next()
			if wok != gok || (wok && !bytes.Equal(we.Term(), ge.Term())) {
				t.Fatalf("field %q: Next after seek(%q) = %v %q, want %v", field, target, gok, ge.Term(), wok)
			}
			if !wok {
				break
			}
		}
	}
}

func checkTermStats(t testing.TB, field string, we, ge index.TermsEnum) {
	if we.DocFreq() != ge.DocFreq() || we.TotalTermFreq() != ge.TotalTermFreq() {
		t.Fatalf("field %q term %q: docFreq %d ttf %d, want %d %d", field, we.Term(), ge.DocFreq(), ge.TotalTermFreq(), we.DocFreq(), we.TotalTermFreq())
	}
}

func layers(opts index.IndexOptions) []index.PostingsFlags {
	switch {
	case opts.HasPositions():
		return []index.PostingsFlags{index.PostingsDocs, index.PostingsFreqs, index.PostingsPositions}
	case opts.HasFreqs():
		return []index.PostingsFlags{index.PostingsDocs, index.PostingsFreqs}
	}
	return []index.PostingsFlags{index.PostingsDocs}
}

// comparePostings walks both enums; with skipping, it mixes NextDoc and
// Advance to random targets, reads positions only for some docs, and may
// stop early.
func comparePostings(t testing.TB, r *rand.Rand, field string, term []byte, flags index.PostingsFlags, w, g index.PostingsEnum, skipping bool) {
	if g.DocID() != -1 {
		t.Fatalf("field %q term %q: DocID %d before iteration", field, term, g.DocID())
	}
	if g.Cost() < w.Cost() { // an upper bound on the docs iterated
		t.Fatalf("field %q term %q: Cost %d below %d", field, term, g.Cost(), w.Cost())
	}
	for n := 0; ; n++ {
		var wd, gd int
		if skipping && r.IntN(3) == 0 {
			gap := 1 + r.IntN(1+r.IntN(600))
			target := w.DocID() + gap
			wd, gd = w.Advance(target), g.Advance(target)
			if wd != gd {
				t.Fatalf("field %q term %q: Advance(%d)=%d, want %d", field, term, target, gd, wd)
			}
		} else {
			wd, gd = w.NextDoc(), g.NextDoc()
			if wd != gd {
				t.Fatalf("field %q term %q flags %d: NextDoc #%d = %d, want %d", field, term, flags, n, gd, wd)
			}
		}
		if g.DocID() != gd {
			t.Fatalf("DocID %d after returning %d", g.DocID(), gd)
		}
		if wd == index.NoMoreDocs {
			return
		}
		if flags&index.PostingsFreqs != 0 && w.Freq() != g.Freq() {
			t.Fatalf("field %q term %q doc %d: freq %d, want %d", field, term, wd, g.Freq(), w.Freq())
		}
		if flags == index.PostingsPositions {
			k := w.Freq()
			if skipping {
				k = r.IntN(k + 1)
			}
			for i := 0; i < k; i++ {
				if wp, gp := w.NextPosition(), g.NextPosition(); wp != gp {
					t.Fatalf("field %q term %q doc %d: position #%d = %d, want %d", field, term, wd, i, gp, wp)
				}
			}
		}
		if skipping && r.IntN(200) == 0 {
			return // partial iteration
		}
	}
}

// checkImpacts walks the impacts enum by AdvanceShallow and checks every
// doc of each block against BlockMax and, when the enum keeps them
// (index.BlockImpactsEnum), against the block's competitive impacts (see
// checkBlockImpacts); also checks Advance on the same enum.
func checkImpacts(t testing.TB, r *rand.Rand, field string, term []byte, opts index.IndexOptions, norms index.NormsReader, w index.PostingsEnum, g index.ImpactsEnum) {
	var docs []int
	var freqs []int
	for d := w.NextDoc(); d != index.NoMoreDocs; d = w.NextDoc() {
		docs = append(docs, d)
		freqs = append(freqs, w.Freq())
	}
	bi, _ := g.(index.BlockImpactsEnum)
	var imps []index.Impact
	target := 0
	i := 0
	prevUpTo := -1 // the last doc of the block before the current one, or below
	for target != index.NoMoreDocs {
		upTo := g.AdvanceShallow(target)
		if upTo < target {
			t.Fatalf("field %q term %q: AdvanceShallow(%d)=%d", field, term, target, upTo)
		}
		if bi != nil {
			imps = bi.BlockImpacts(imps[:0])
			checkBlockImpacts(t, field, term, norms, docs, freqs, imps, prevUpTo, target, upTo)
		}
		prevUpTo = upTo
		maxFreq, minNorm := g.BlockMax()
		for ; i < len(docs) && docs[i] <= upTo; i++ {
			if docs[i] < target {
				continue
			}
			if freqs[i] > maxFreq {
				t.Fatalf("field %q term %q doc %d: freq %d above block max %d", field, term, docs[i], freqs[i], maxFreq)
			}
			if norms != nil && norms.Norm(docs[i]) < minNorm {
				t.Fatalf("field %q term %q doc %d: norm %d below block min %d", field, term, docs[i], norms.Norm(docs[i]), minNorm)
			}
		}
		if upTo == index.NoMoreDocs {
			break
		}
		target = upTo + 1 + r.IntN(1+r.IntN(300))
		if r.IntN(4) == 0 && target > g.DocID() {
			// Mix in a real Advance: later AdvanceShallow calls must still work.
			want := index.NoMoreDocs
			for _, d := range docs {
				if d >= target {
					want = d
					break
				}
			}
			if got := g.Advance(target); got != want {
				t.Fatalf("field %q term %q: impacts Advance(%d)=%d, want %d", field, term, target, got, want)
			}
			if want == index.NoMoreDocs {
				return
			}
			target = want
			i = 0
		}
	}
}

// ExactImpacts is how many competitive impacts per block a codec must keep
// exactly; beyond it a codec may store a coarser set (see
// checkBlockImpacts).
const ExactImpacts = 16

// checkBlockImpacts checks the competitive impacts imps of the block that
// holds target and ends at upTo. Its docs are some of (prevUpTo, upTo]:
// all of those when target == prevUpTo+1 (the block right after the last
// one), and at least those in [target, upTo] otherwise. It checks that
//   - imps is a competitive set: freqs and norms strictly increasing;
//   - every doc known to be in the block is dominated by a pair (freq >=,
//     norm <=): the set bounds every score in the block;
//   - no value is invented: each pair's freq and norm occur among the
//     block's possible docs;
//   - when the block's docs are known exactly, the set is the exact
//     competitive set if that has at most ExactImpacts pairs, otherwise a
//     smaller set each of whose pairs dominates one of it (a codec may
//     merge pairs to cap the size, never loosen more).
func checkBlockImpacts(t testing.TB, field string, term []byte, norms index.NormsReader, docs, freqs []int, imps []index.Impact, prevUpTo, target, upTo int) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("field %q term %q block (%d, %d] at %d: impacts %v: %s", field, term, prevUpTo, upTo, target, imps, fmt.Sprintf(format, args...))
	}
	if len(imps) == 0 {
		fail("empty")
	}
	for j := 1; j < len(imps); j++ {
		if imps[j].Freq <= imps[j-1].Freq || imps[j].Norm <= imps[j-1].Norm {
			fail("not strictly increasing")
		}
	}
	normOf := func(d int) uint8 {
		if norms == nil {
			return 0
		}
		return norms.Norm(d)
	}
	var block []index.Impact // every doc of (prevUpTo, upTo]
	lo, _ := slices.BinarySearch(docs, prevUpTo+1)
	for k := lo; k < len(docs) && docs[k] <= upTo; k++ {
		d := docs[k]
		im := index.Impact{Freq: freqs[k], Norm: normOf(d)}
		block = append(block, im)
		if d >= target && !dominated(im, imps) {
			fail("doc %d %v is above every pair", d, im)
		}
	}
	for _, p := range imps {
		freqSeen, normSeen := false, false
		for _, im := range block {
			freqSeen = freqSeen || im.Freq == p.Freq
			normSeen = normSeen || im.Norm == p.Norm
		}
		if !freqSeen || !normSeen {
			fail("pair %v: no doc has its freq (%v) or its norm (%v)", p, freqSeen, normSeen)
		}
	}
	if target != prevUpTo+1 {
		return
	}
	front := Competitive(block)
	if len(imps) >= len(front) || len(front) <= ExactImpacts {
		if !slices.Equal(imps, front) {
			fail("want the competitive set %v", front)
		}
		return
	}
	for _, p := range imps {
		if !slices.ContainsFunc(front, func(im index.Impact) bool { return dominated(im, []index.Impact{p}) }) {
			fail("pair %v dominates no competitive pair of %v", p, front)
		}
	}
}

// dominated reports whether some pair of set has at least im's freq and at
// most its norm.
func dominated(im index.Impact, set []index.Impact) bool {
	for _, p := range set {
		if p.Freq >= im.Freq && p.Norm <= im.Norm {
			return true
		}
	}
	return false
}

// Competitive is the competitive set of a block's (freq, norm) pairs by
// brute force, the model codecs are checked against: the distinct pairs no
// other pair dominates, ordered by freq.
func Competitive(all []index.Impact) []index.Impact {
	var out []index.Impact
	for _, a := range all {
		if slices.ContainsFunc(all, func(b index.Impact) bool { return b != a && b.Freq >= a.Freq && b.Norm <= a.Norm }) ||
			slices.Contains(out, a) {
			continue
		}
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b index.Impact) int { return a.Freq - b.Freq })
	return out
}

func checkValues(t testing.TB, field string, want, got index.LeafReader) {
	wn, gn := want.Norms(field), got.Norms(field)
	if wn != nil && gn == nil {
		t.Fatalf("field %q: no norms", field)
	}
	for d := 0; gn != nil && d < want.MaxDoc(); d++ {
		w := uint8(0) // no norms reads as 0 for every doc
		if wn != nil {
			w = wn.Norm(d)
		}
		if gn.Norm(d) != w {
			t.Fatalf("field %q doc %d: norm %d, want %d", field, d, gn.Norm(d), w)
		}
	}
	wv, gv := want.NumericDocValues(field), got.NumericDocValues(field)
	if wv != nil {
		for d := 0; d < want.MaxDoc(); d++ {
			a, aok := wv.Get(d)
			var b int64
			var bok bool
			if gv != nil { // nil is fine when no doc has a value
				b, bok = gv.Get(d)
			}
			if a != b || aok != bok {
				t.Fatalf("field %q doc %d: numeric %d,%v, want %d,%v", field, d, b, bok, a, aok)
			}
		}
	}
	ws, gs := want.SortedDocValues(field), got.SortedDocValues(field)
	if ws != nil && ws.ValueCount() > 0 {
		if gs == nil || gs.ValueCount() != ws.ValueCount() {
			t.Fatalf("field %q: sorted doc values missing or wrong count", field)
		}
		for o := 0; o < ws.ValueCount(); o++ {
			if !bytes.Equal(ws.LookupOrd(o), gs.LookupOrd(o)) {
				t.Fatalf("field %q ord %d: %q, want %q", field, o, gs.LookupOrd(o), ws.LookupOrd(o))
			}
		}
		for d := 0; d < want.MaxDoc(); d++ {
			if ws.Ord(d) != gs.Ord(d) {
				t.Fatalf("field %q doc %d: ord %d, want %d", field, d, gs.Ord(d), ws.Ord(d))
			}
		}
	}
}

func checkStored(t testing.TB, r *rand.Rand, want, got index.LeafReader) {
	ws, gs := want.StoredFields(), got.StoredFields()
	var a, b index.StoredDoc
	n := want.MaxDoc()
	order := make([]int, 0, 2*n)
	for d := 0; d < n; d++ {
		order = append(order, d)
	}
	order = append(order, r.Perm(n)...)
	for _, d := range order {
		if err := ws.Document(d, &a); err != nil {
			t.Fatal(err)
		}
		if err := gs.Document(d, &b); err != nil {
			t.Fatalf("doc %d: %v", d, err)
		}
		if !bytes.Equal(a.ID, b.ID) || !bytes.Equal(a.Routing, b.Routing) || !bytes.Equal(a.Source, b.Source) {
			t.Fatalf("doc %d: stored %q routing %q/%d bytes, want %q routing %q/%d bytes", d, b.ID, b.Routing, len(b.Source), a.ID, a.Routing, len(a.Source))
		}
	}
}
