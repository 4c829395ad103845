package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-search/sluice/node/engine/bitflip"
	"github.com/sluice-search/sluice/node/engine/codec"
	"github.com/sluice-search/sluice/node/engine/cpubudget"
	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/mapping"
	"github.com/sluice-search/sluice/node/engine/search"
	"github.com/sluice-search/sluice/node/engine/store"
)

// scrubParser: text with positions and norms, a keyword (sorted doc
// values), a long (numeric doc values): every file the codec writes.
func scrubParser(t testing.TB) DocParser {
	t.Helper()
	return strictParser(t, map[string]mapping.Field{
		"body": mapping.NewField(document.Text),
		"tag":  mapping.NewField(document.Keyword),
		"n":    mapping.NewField(document.Long),
	})
}

// strictParser is a MappingParser over a strict mapping of fields.
func strictParser(t testing.TB, fields map[string]mapping.Field) *MappingParser {
	t.Helper()
	m, err := mapping.New(mapping.DynamicStrict, fields)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewMappingParser(m)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var scrubWords = strings.Fields("river stone water light wind field bridge tower north south market harbour")

// openScrubEngine opens an engine at dir with merges and periodic
// refreshes off, so that its files stay put.
func openScrubEngine(t testing.TB, dir string, opts Options) (*Engine, error) {
	t.Helper()
	opts.Path = dir
	opts.Parser = scrubParser(t)
	opts.Codec = codec.New(codec.Options{StoredBlockSize: 4 << 10})
	opts.RefreshInterval = -1
	if opts.MergePolicy == nil && opts.MergeScheduler == nil {
		opts.DisableMerges = true
	}
	return Open(context.Background(), opts)
}

// fillScrubEngine indexes docs with ids from first, deletes every tenth
// and commits, so that every file type (live docs too) is on disk.
func fillScrubEngine(t testing.TB, e *Engine, r *rand.Rand, first, docs int, srcBytes int) {
	t.Helper()
	ctx := context.Background()
	b := e.NewBulk()
	for i := first; i < first+docs; i++ {
		var body strings.Builder
		for body.Len() < srcBytes {
			body.WriteString(scrubWords[r.IntN(len(scrubWords))])
			fmt.Fprintf(&body, " w%d ", r.IntN(5000))
		}
		src := fmt.Sprintf(`{"body":%q,"tag":"t%d","n":%d}`, body.String(), r.IntN(50), r.Int64N(1e9))
		if _, err := b.Index(ctx, fmt.Appendf(nil, "d%d", i), []byte(src)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for i := first; i < first+docs; i += 10 {
		if _, err := e.Delete(ctx, fmt.Appendf(nil, "d%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Commit(ctx, CommitOptions{}); err != nil {
		t.Fatal(err)
	}
}

// segmentFileSuffixes are the files an engine keeps: every extension the
// codec writes, and the commit point.
var segmentFileSuffixes = []string{".smt", ".tim", ".doc", ".pos", ".nvd", ".dvd", ".fdt", ".liv", "segments_"}

// TestScrubFailsShardOnEveryFileType flips one bit in each kind of file an
// engine keeps: the scrubber (interval shortened) finds it, the engine
// fails naming the file, searches, gets, writes, refreshes and commits
// return that error instead of results, and the store stays marked
// corrupted across a reopen.
func TestScrubFailsShardOnEveryFileType(t *testing.T) {
	ctx := context.Background()
	for _, suffix := range segmentFileSuffixes {
		t.Run(strings.Trim(suffix, "._"), func(t *testing.T) {
			dir := t.TempDir()
			var failed []error
			var mu sync.Mutex
			e, err := openScrubEngine(t, dir, Options{OnFailure: func(err error) {
				mu.Lock()
				failed = append(failed, err)
				mu.Unlock()
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close(ctx)
			fillScrubEngine(t, e, rand.New(rand.NewPCG(1, 2)), 0, 600, 200)
			q := &search.TermQuery{Field: "body", Term: []byte("river")}
			r := e.Acquire()
			before, err := r.Searcher().Count(ctx, q)
			r.Release()
			if err != nil || before == 0 {
				t.Fatalf("count before: %d %v", before, err)
			}

			name := bitflip.Largest(t, dir, suffix)
			sc := NewScrubber(ScrubOptions{Poll: 5 * time.Millisecond, Interval: time.Hour, BytesPerSec: -1}, func() []ScrubTarget { return []ScrubTarget{e} })
			defer sc.Close()
			// OnFailure is told last, after the marker is written.
			heard := func() int {
				mu.Lock()
				defer mu.Unlock()
				return len(failed)
			}
			deadline := time.Now().Add(20 * time.Second)
			for heard() == 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			ferr := e.Failure()
			if !errors.Is(ferr, ErrFailed) || !errors.Is(ferr, index.ErrCorrupt) || !strings.Contains(ferr.Error(), name) {
				t.Fatalf("failure after flipping a bit in %s: %v", name, ferr)
			}
			if !strings.Contains(ferr.Error(), "(scrub)") {
				t.Errorf("failure does not say the scrubber found it: %v", ferr)
			}
			mu.Lock()
			if len(failed) != 1 || failed[0] != ferr {
				t.Errorf("OnFailure heard %v, want once %v", failed, ferr)
			}
			mu.Unlock()
			if st := e.Stats(); st.CorruptFiles != 1 || st.VerifiedFiles == 0 || st.VerifiedBytes == 0 {
				t.Errorf("stats: %d corrupt, %d files, %d bytes verified", st.CorruptFiles, st.VerifiedFiles, st.VerifiedBytes)
			}

			// Everything that reads or writes now answers with the
			// failure.
			refused := map[string]error{}
			_, refused["AcquireReader"] = e.AcquireReader()
			_, _, refused["Get"] = e.Get(ctx, []byte("d1"), GetOptions{Realtime: true})
			_, refused["Index"] = e.Index(ctx, []byte("new"), []byte(`{"body":"x"}`))
			_, refused["Delete"] = e.Delete(ctx, []byte("d2"))
			_, refused["Refresh"] = e.Refresh(ctx)
			_, refused["Commit"] = e.Commit(ctx, CommitOptions{})
			refused["WaitForGeneration"] = e.WaitForGeneration(ctx, e.Stats().SeqNo+1)
			for op, err := range refused {
				if !errors.Is(err, index.ErrCorrupt) || !strings.Contains(err.Error(), name) {
					t.Errorf("%s on the failed engine: %v", op, err)
				}
			}
			sc.Close()
			if err := e.Close(ctx); err != nil {
				t.Fatal(err)
			}

			// The marker keeps it failed across a restart, naming the
			// original reason.
			_, err = openScrubEngine(t, dir, Options{})
			if !errors.Is(err, ErrMarkedCorrupted) || !errors.Is(err, index.ErrCorrupt) || !strings.Contains(err.Error(), name) {
				t.Fatalf("reopen: %v", err)
			}
		})
	}
}

// TestScrubPasses: a pass verifies each file once; files that appear
// later are verified when the scrubber next looks, without re-reading the
// others; a new pass starts after the interval and reads everything again.
func TestScrubPasses(t *testing.T) {
	ctx := context.Background()
	e, err := openScrubEngine(t, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	r := rand.New(rand.NewPCG(3, 4))
	fillScrubEngine(t, e, r, 0, 300, 100)
	files := e.indexFiles()
	size := func(names []string) (n int64) {
		for _, f := range names {
			l, err := e.dir.FileLength(f)
			if err != nil {
				t.Fatal(err)
			}
			n += l
		}
		return n
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; stats %+v", what, e.Stats())
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	sc := NewScrubber(ScrubOptions{Poll: 20 * time.Millisecond, Interval: time.Hour, BytesPerSec: -1}, func() []ScrubTarget { return []ScrubTarget{e} })
	defer sc.Close()
	waitFor("the first pass", func() bool { return sc.Stats().Passes == 1 })
	want := size(files)
	if st := e.Stats(); st.VerifiedFiles != int64(len(files)) || st.VerifiedBytes != want || st.ScrubbedAt.IsZero() {
		t.Fatalf("first pass: %d files, %d bytes, at %v; want %d files, %d bytes", st.VerifiedFiles, st.VerifiedBytes, st.ScrubbedAt, len(files), want)
	}
	time.Sleep(100 * time.Millisecond) // several polls: nothing new to read
	if st := e.Stats(); st.VerifiedFiles != int64(len(files)) {
		t.Fatalf("files re-read within a pass: %d verified", st.VerifiedFiles)
	}

	fillScrubEngine(t, e, r, 1000, 100, 100) // a new segment and commit
	var added []string
	for _, f := range e.indexFiles() {
		if !slices.Contains(files, f) {
			added = append(added, f)
		}
	}
	if len(added) == 0 {
		t.Fatal("no new files")
	}
	wantAdded := int64(len(files) + len(added))
	waitFor("the new files", func() bool { return e.Stats().VerifiedFiles >= wantAdded })
	time.Sleep(100 * time.Millisecond)
	if st := e.Stats(); st.VerifiedFiles != wantAdded || st.VerifiedBytes != want+size(added) {
		t.Fatalf("after new files: %d files %d bytes verified, want %d files", st.VerifiedFiles, st.VerifiedBytes, wantAdded)
	}
	if sc.Stats().Passes != 1 {
		t.Fatalf("%d passes within the interval", sc.Stats().Passes)
	}
	sc.Close()

	// A short interval: passes follow each other, each reading every
	// current file again.
	cur := int64(len(e.indexFiles()))
	base := e.Stats().VerifiedFiles
	sc2 := NewScrubber(ScrubOptions{Poll: time.Millisecond, Interval: 30 * time.Millisecond, BytesPerSec: -1}, func() []ScrubTarget { return []ScrubTarget{e} })
	defer sc2.Close()
	waitFor("three passes", func() bool { return sc2.Stats().Passes >= 3 })
	sc2.Close()
	passes := sc2.Stats().Passes
	if got := e.Stats().VerifiedFiles - base; got != passes*cur {
		t.Fatalf("%d passes verified %d files, want %d each", passes, got, cur)
	}
}

// TestScrubThrottle: the scrubber and Verify never read faster than their
// rate. The token bucket holds one chunk, so over t seconds at most
// chunk + rate*t bytes are read: the bound is exact, not a timing
// guess. They must not be much slower either (a loose bound, as the
// machine is shared).
func TestScrubThrottle(t *testing.T) {
	if testing.Short() {
		t.Skip("reads ~8 MiB twice at 4 MiB/s")
	}
	ctx := context.Background()
	e, err := openScrubEngine(t, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	// Random words compress poorly: ~8 MiB of files.
	fillScrubEngine(t, e, rand.New(rand.NewPCG(5, 6)), 0, 4500, 2000)
	const rate = 4 << 20
	check := func(what string, bytes int64, took time.Duration) {
		t.Helper()
		if bytes < 6<<20 {
			t.Fatalf("%s: only %d bytes to read", what, bytes)
		}
		// Less the first chunk (the bucket starts full) and the 8 bytes
		// of each footer's checksum, which are not paced.
		floor := time.Duration(float64(bytes-verifyChunk-1<<10) / rate * float64(time.Second))
		t.Logf("%s: %d bytes in %v: %.2f MiB/s (limit 4)", what, bytes, took, float64(bytes)/took.Seconds()/(1<<20))
		if took < floor {
			t.Errorf("%s: %d bytes in %v, faster than %d B/s allows (%v)", what, bytes, took, rate, floor)
		}
		if took > 4*floor {
			t.Errorf("%s: %d bytes in %v, far below the rate", what, bytes, took)
		}
	}
	res, err := e.Verify(ctx, VerifyOptions{BytesPerSec: rate, Budget: cpubudget.New(1)})
	if err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	check("Verify", res.Bytes, res.Took)

	before := e.Stats().VerifiedBytes
	sc := NewScrubber(ScrubOptions{Poll: time.Millisecond, Interval: time.Hour, BytesPerSec: rate}, func() []ScrubTarget { return []ScrubTarget{e} })
	defer sc.Close()
	deadline := time.Now().Add(30 * time.Second)
	for sc.Stats().Passes == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if sc.Stats().Passes == 0 {
		t.Fatal("no pass in 30 s")
	}
	check("scrub pass", e.Stats().VerifiedBytes-before, sc.Stats().LastPass)
}

// TestVerify: the on-demand check reads every file (a clean engine: all
// OK, and with Deep every segment decodes); a damaged file is reported by
// name, fails the engine and marks the store.
func TestVerify(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e, err := openScrubEngine(t, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	fillScrubEngine(t, e, rand.New(rand.NewPCG(7, 8)), 0, 300, 100)
	res, err := e.Verify(ctx, VerifyOptions{Deep: true})
	if err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	if len(res.Files) != len(e.indexFiles()) || len(res.Segments) != e.Stats().Segments || res.Bytes == 0 {
		t.Fatalf("verified %d files, %d segments, %d bytes", len(res.Files), len(res.Segments), res.Bytes)
	}
	for _, f := range res.Files {
		if f.Status != FileOK {
			t.Fatalf("%s: %v %v", f.Name, f.Status, f.Err)
		}
	}
	name := bitflip.Largest(t, dir, ".dvd")
	res, err = e.Verify(ctx, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	for _, f := range res.Files {
		if f.Status != FileOK {
			bad = append(bad, f.Name+" "+f.Status.String())
		}
	}
	if !slices.Equal(bad, []string{name + " corrupt"}) || !errors.Is(res.Err(), index.ErrCorrupt) {
		t.Fatalf("after damaging %s: %v (%v)", name, bad, res.Err())
	}
	if err := e.Failure(); !strings.Contains(fmt.Sprint(err), name) || !strings.Contains(err.Error(), "(verify)") {
		t.Fatalf("failure: %v", err)
	}
	e.Close(ctx)
	if _, err := openScrubEngine(t, dir, Options{}); !errors.Is(err, ErrMarkedCorrupted) {
		t.Fatalf("reopen: %v", err)
	}
}

// TestVerifyFileDeletedMidway: a file deleted before it is opened is
// FileGone; one deleted while it is read (merged away mid-scrub) is read
// to the end through its mapping, and both are fine.
func TestVerifyFileDeletedMidway(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e, err := openScrubEngine(t, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fillScrubEngine(t, e, rand.New(rand.NewPCG(9, 10)), 0, 3000, 1200)
	files := e.indexFiles()
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	fsdir, err := store.NewFSDirectory(dir)
	if err != nil {
		t.Fatal(err)
	}
	var big string
	var bigSize int64
	for _, f := range files {
		if n, _ := fsdir.FileLength(f); n > bigSize {
			big, bigSize = f, n
		}
	}
	if bigSize <= verifyChunk {
		t.Fatalf("largest file %s has %d bytes; want several chunks", big, bigSize)
	}
	chunks := 0
	p := &pacer{ctx: ctx, check: func() {
		if chunks++; chunks == 1 { // mapped, not read yet
			if err := fsdir.DeleteFile(big); err != nil {
				t.Error(err)
			}
		}
	}}
	c := codec.New(codec.Options{})
	fc, err := verifyFile(p, fsdir, c, big)
	if err != nil || fc.Status != FileOK || fc.Bytes != bigSize {
		t.Fatalf("deleted while read: %+v %v", fc, err)
	}
	if _, err := fsdir.FileLength(big); err == nil {
		t.Fatal("not deleted")
	}
	fc, err = verifyFile(p, fsdir, c, big)
	if err != nil || fc.Status != FileGone || fc.Err != nil {
		t.Fatalf("deleted before: %+v %v", fc, err)
	}
	checks, err := VerifyFiles(ctx, fsdir, c, files, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, fc := range checks {
		if want := map[bool]FileStatus{true: FileGone, false: FileOK}[fc.Name == big]; fc.Status != want {
			t.Errorf("%s: %v %v, want %v", fc.Name, fc.Status, fc.Err, want)
		}
	}
}

// TestScrubOptionsDefaults: an interval shorter than the default poll
// brings the first pass and the looks for new files forward with it.
func TestScrubOptionsDefaults(t *testing.T) {
	tests := []struct {
		in       ScrubOptions
		wantPoll time.Duration
		wantIv   time.Duration
	}{
		{ScrubOptions{}, DefaultScrubPoll, DefaultScrubInterval},
		{ScrubOptions{Interval: 2 * time.Second}, 2 * time.Second, 2 * time.Second},
		{ScrubOptions{Interval: time.Hour}, DefaultScrubPoll, time.Hour},
		{ScrubOptions{Interval: 2 * time.Second, Poll: 10 * time.Millisecond}, 10 * time.Millisecond, 2 * time.Second},
	}
	for _, tt := range tests {
		o := tt.in
		o.setDefaults()
		if o.Poll != tt.wantPoll || o.Interval != tt.wantIv {
			t.Errorf("%+v: poll %v interval %v, want %v %v", tt.in, o.Poll, o.Interval, tt.wantPoll, tt.wantIv)
		}
	}
}
