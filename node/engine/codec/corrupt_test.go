package codec

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluice-search/sluice/node/engine/codec/codectest"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/store"
)

// exercise reads everything a searcher could read from sr, bounding loops a
// corrupt freq could make endless. It must not panic; results are ignored.
func exercise(sr index.SegmentReader) {
	fis := sr.FieldInfos()
	for n := 0; n < fis.Len(); n++ {
		name := fis.ByNumber(n).Name
		if terms := sr.Terms(name); terms != nil {
			te := terms.Iterator()
			var pe index.PostingsEnum
			for k := 0; te.Next() && k < 100000; k++ {
				pe = te.Postings(pe, index.PostingsPositions)
				for d, i := pe.NextDoc(), 0; d != index.NoMoreDocs && i < 100000; d, i = pe.NextDoc(), i+1 {
					for j := 0; j < min(pe.Freq(), 50); j++ {
						pe.NextPosition()
					}
				}
				ie := te.Impacts(index.PostingsFreqs)
				bi, _ := ie.(index.BlockImpactsEnum)
				var imps []index.Impact
				for target, i := 0, 0; target != index.NoMoreDocs && i < 1000; i++ {
					up := ie.AdvanceShallow(target)
					ie.BlockMax()
					if bi != nil {
						imps = bi.BlockImpacts(imps[:0])
					}
					if up == index.NoMoreDocs {
						break
					}
					target = ie.Advance(up + 1)
				}
			}
			te.SeekCeil([]byte("m"))
			te.SeekExact([]byte("all"))
		}
		if nr := sr.Norms(name); nr != nil {
			for d := 0; d < sr.MaxDoc(); d++ {
				nr.Norm(d)
			}
		}
		if nv := sr.NumericDocValues(name); nv != nil {
			for d := 0; d < sr.MaxDoc(); d++ {
				nv.Get(d)
			}
		}
		if sv := sr.SortedDocValues(name); sv != nil {
			for d := 0; d < sr.MaxDoc(); d++ {
				if o := sv.Ord(d); o >= 0 {
					sv.LookupOrd(o)
				}
			}
		}
	}
	sf := sr.StoredFields()
	var doc index.StoredDoc
	for d := 0; d < sr.MaxDoc(); d++ {
		sf.Document(d, &doc)
	}
}

// TestCorruption flips random bytes in each file of a segment: OpenSegment
// or CheckIntegrity must report ErrCorrupt, reading the opened segment must
// never panic, and a file checksummed at open never opens.
func TestCorruption(t *testing.T) {
	r := codectest.Rand(t)
	m := codectest.Random(r, codectest.RandomOptions{Docs: 700, SpecialDocFreqs: []int{1, 129, 300}, RandomTerms: 60, MaxFreq: 40, SourceSize: 100})
	c := New(Options{StoredBlockSize: 2000})
	clean := store.NewRAMDirectory()
	info := newInfo(r, "_c", m.MaxDoc())
	writeModel(t, c, clean, info, m)
	files := map[string][]byte{}
	for _, name := range info.Files {
		in, _ := clean.OpenInput(name)
		files[name] = in.Bytes()
	}
	trials := 40
	if raceEnabled {
		trials = 8
	}
	if codectest.LongMode() {
		trials = 400
	}
	for _, victim := range info.Files {
		for trial := 0; trial < trials; trial++ {
			dir := store.NewRAMDirectory()
			for name, data := range files {
				data = append([]byte(nil), data...)
				what := ""
				if name == victim {
					switch k := r.IntN(10); {
					case k == 0 && len(data) > 1:
						data = data[:r.IntN(len(data))]
						what = fmt.Sprintf("truncated to %d", len(data))
					default:
						for n := 1 + r.IntN(3); n > 0; n-- {
							i := r.IntN(len(data))
							data[i] ^= byte(1 + r.IntN(255))
							what += fmt.Sprintf(" flip@%d", i)
						}
					}
				}
				out, _ := dir.CreateOutput(name, store.IOContext{})
				out.Write(data)
				out.Close()
				_ = what
			}
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("%s trial %d: panic: %v", victim, trial, p)
					}
				}()
				sr, err := c.OpenSegment(dir, info)
				if err != nil {
					if !errors.Is(err, index.ErrCorrupt) {
						t.Fatalf("%s: open error %v does not wrap ErrCorrupt", victim, err)
					}
					if !strings.Contains(err.Error(), "offset") {
						t.Fatalf("%s: error %q names no offset", victim, err)
					}
					return
				}
				defer sr.Close()
				if strings.HasSuffix(victim, "."+extMeta) || strings.HasSuffix(victim, "."+extTerms) {
					t.Fatalf("%s: corrupt checksummed file opened", victim)
				}
				exercise(sr)
				err = sr.(*segmentReader).CheckIntegrity()
				if !errors.Is(err, index.ErrCorrupt) {
					t.Fatalf("%s trial %d: CheckIntegrity = %v, want ErrCorrupt", victim, trial, err)
				}
			}()
		}
	}
}

// TestVerifyChecksum: one flipped bit anywhere in any file the codec
// writes, live docs included, fails VerifyChecksum naming the file, paced
// in chunks that cover the file; the clean files pass; a pace error stops
// it.
func TestVerifyChecksum(t *testing.T) {
	r := codectest.Rand(t)
	m := codectest.Random(r, codectest.RandomOptions{Docs: 300, SpecialDocFreqs: []int{1, 129}, RandomTerms: 30, MaxFreq: 10, SourceSize: 100})
	c := New(Options{StoredBlockSize: 2000})
	dir := store.NewRAMDirectory()
	info := newInfo(r, "_v", m.MaxDoc())
	writeModel(t, c, dir, info, m)
	live := index.NewFixedBitSetAllSet(m.MaxDoc())
	live.Clear(7)
	liv, err := c.WriteLiveDocs(dir, info, 1, live, store.IOContext{})
	if err != nil {
		t.Fatal(err)
	}
	exts := map[string]bool{}
	for _, name := range append(info.Files, liv) {
		in, err := dir.OpenInput(name)
		if err != nil {
			t.Fatal(err)
		}
		data := in.Bytes()
		exts[name[strings.LastIndexByte(name, '.')+1:]] = true
		paced := 0
		if err := c.VerifyChecksum(name, data, 100, func(n int) error {
			if n > 100 || n <= 0 {
				t.Fatalf("%s: chunk of %d bytes", name, n)
			}
			paced += n
			return nil
		}); err != nil {
			t.Fatalf("%s: clean file: %v", name, err)
		}
		if paced != len(data)-8 {
			t.Fatalf("%s: paced %d bytes of %d", name, paced, len(data)-8)
		}
		for _, at := range []int{0, 5, len(data) / 2, len(data) - footerLen, len(data) - 1} {
			bad := append([]byte(nil), data...)
			bad[at] ^= 1 << r.IntN(8)
			err := c.VerifyChecksum(name, bad, 64, nil)
			if !errors.Is(err, index.ErrCorrupt) || !strings.Contains(err.Error(), name) {
				t.Fatalf("%s: bit flipped at %d of %d: %v", name, at, len(data), err)
			}
		}
		stop := errors.New("stop")
		if err := c.VerifyChecksum(name, data, 64, func(int) error { return stop }); err != stop {
			t.Fatalf("%s: pace error: %v", name, err)
		}
	}
	for _, ext := range []string{extMeta, extTerms, extDocs, extPos, extNorms, extDV, extStored, extLiveDocs} {
		if !exts[ext] {
			t.Errorf("no .%s file checked", ext)
		}
	}
}
