package store

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

type dirCase struct {
	name string
	open func(t testing.TB) Directory
}

func dirCases() []dirCase {
	return []dirCase{
		{"fs", func(t testing.TB) Directory {
			d, err := NewFSDirectory(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return d
		}},
		{"ram", func(t testing.TB) Directory { return NewRAMDirectory() }},
		{"nrt-cached", func(t testing.TB) Directory {
			fsd, err := NewFSDirectory(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return NewNRTCachingDirectory(fsd, 1<<20, 8<<20)
		}},
	}
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// writeFile writes data in random-sized pieces and checks FilePointer and the
// incremental checksum against crc32 of what was written so far.
func writeFile(t *testing.T, d Directory, name string, data []byte, ctx IOContext, r *rand.Rand) {
	t.Helper()
	out, err := d.CreateOutput(name, ctx)
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(data); {
		n := min(len(data)-off, 1+r.IntN(200<<10))
		if _, err := out.Write(data[off : off+n]); err != nil {
			t.Fatal(err)
		}
		off += n
		if out.FilePointer() != int64(off) {
			t.Fatalf("FilePointer %d want %d", out.FilePointer(), off)
		}
		if got, want := out.Checksum(), crc32.ChecksumIEEE(data[:off]); got != want {
			t.Fatalf("checksum after %d bytes: %x want %x", off, got, want)
		}
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestDirectoryRoundTrip(t *testing.T) {
	for _, dc := range dirCases() {
		t.Run(dc.name, func(t *testing.T) {
			d := dc.open(t)
			defer d.Close()
			r := rand.New(rand.NewPCG(1, 2))
			sizes := []int{0, 1, 100, writeBufferSize - 1, writeBufferSize, writeBufferSize + 1, 1 << 20}
			ctx := IOContext{Kind: IOFlush}
			want := map[string][]byte{}
			for i, n := range sizes {
				name := fmt.Sprintf("_0.f%d", i)
				data := randBytes(r, n)
				writeFile(t, d, name, data, ctx, r)
				want[name] = data
			}
			if _, err := d.CreateOutput("_0.f0", ctx); err == nil {
				t.Fatal("CreateOutput of an existing file succeeded")
			}
			names, err := d.ListAll()
			if err != nil || len(names) != len(sizes) {
				t.Fatalf("ListAll = %v, %v", names, err)
			}
			for name, data := range want {
				in, err := d.OpenInput(name)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(in.Bytes(), data) {
					t.Fatalf("%s: content differs", name)
				}
				if n, err := d.FileLength(name); err != nil || n != int64(len(data)) {
					t.Fatalf("%s: FileLength %d, %v", name, n, err)
				}
				if err := in.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.Sync(names); err != nil {
				t.Fatal(err)
			}
			if err := d.Rename("_0.f2", "segments_1"); err != nil {
				t.Fatal(err)
			}
			if err := d.SyncMetaData(); err != nil {
				t.Fatal(err)
			}
			in, err := d.OpenInput("segments_1")
			if err != nil || !bytes.Equal(in.Bytes(), want["_0.f2"]) {
				t.Fatalf("renamed file: %v", err)
			}
			in.Close()
			if _, err := d.OpenInput("_0.f2"); err == nil {
				t.Fatal("old name still opens after rename")
			}
			if err := d.DeleteFile("nope"); err == nil {
				t.Fatal("deleting a missing file succeeded")
			}
			if _, err := d.OpenInput("nope"); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("OpenInput of missing file: %v", err)
			}
		})
	}
}

// A reader keeps reading a file that is deleted under it (mmap / RAM slices
// stay valid until the input is closed): segment files are deleted while
// old point-in-time readers still use them.
func TestReadWhileDeleted(t *testing.T) {
	for _, dc := range dirCases() {
		t.Run(dc.name, func(t *testing.T) {
			d := dc.open(t)
			defer d.Close()
			r := rand.New(rand.NewPCG(3, 4))
			data := randBytes(r, 300<<10)
			writeFile(t, d, "_1.doc", data, IOContext{Kind: IOFlush}, r)
			in, err := d.OpenInput("_1.doc")
			if err != nil {
				t.Fatal(err)
			}
			if err := d.DeleteFile("_1.doc"); err != nil {
				t.Fatal(err)
			}
			if _, err := d.FileLength("_1.doc"); err == nil {
				t.Fatal("deleted file still listed")
			}
			if !bytes.Equal(in.Bytes(), data) {
				t.Fatal("content changed after delete")
			}
			if err := in.Close(); err != nil {
				t.Fatal(err)
			}
			// The name can be reused.
			writeFile(t, d, "_1.doc", data[:10], IOContext{}, r)
		})
	}
}

func TestThrottle(t *testing.T) {
	for _, dc := range dirCases() {
		t.Run(dc.name, func(t *testing.T) {
			d := dc.open(t)
			defer d.Close()
			var calls, total int
			ctx := IOContext{Kind: IOMerge, EstimatedSize: 1 << 30, Throttle: func(n int) error {
				calls++
				total += n
				return nil
			}}
			out, err := d.CreateOutput("_2.doc", ctx)
			if err != nil {
				t.Fatal(err)
			}
			chunk := make([]byte, 1000)
			for i := 0; i < 1000; i++ {
				out.Write(chunk)
			}
			out.Close()
			if total != 1000*1000 {
				t.Fatalf("throttled %d bytes, want %d", total, 1000*1000)
			}
			if calls == 0 {
				t.Fatal("Throttle never called")
			}
			abort := errors.New("merge aborted")
			out, err = d.CreateOutput("_3.doc", IOContext{Kind: IOMerge, Throttle: func(int) error { return abort }})
			if err != nil {
				t.Fatal(err)
			}
			var werr error
			for i := 0; i < 200 && werr == nil; i++ {
				_, werr = out.Write(chunk)
			}
			out.Close()
			if !errors.Is(werr, abort) {
				t.Fatalf("write error %v, want the throttle's", werr)
			}
		})
	}
}

// FS outputs call Throttle per buffer, not per write.
func TestFSThrottleIsChunked(t *testing.T) {
	d, _ := NewFSDirectory(t.TempDir())
	calls := 0
	out, _ := d.CreateOutput("x", IOContext{Throttle: func(int) error { calls++; return nil }})
	b := []byte{1}
	for i := 0; i < 1<<20; i++ {
		out.Write(b)
	}
	out.Close()
	if calls != (1<<20)/writeBufferSize {
		t.Fatalf("%d throttle calls for 1 MiB of 1-byte writes", calls)
	}
}

func TestNRTCaching(t *testing.T) {
	tmp := t.TempDir()
	fsd, err := NewFSDirectory(tmp)
	if err != nil {
		t.Fatal(err)
	}
	d := NewNRTCachingDirectory(fsd, 1000, 2500)
	r := rand.New(rand.NewPCG(5, 6))
	tests := []struct {
		name   string
		ctx    IOContext
		size   int
		cached bool
	}{
		{"_0.small-flush", IOContext{Kind: IOFlush, EstimatedSize: 800}, 800, true},
		{"_1.small-merge", IOContext{Kind: IOMerge, EstimatedSize: 900}, 900, true},
		{"_2.big-flush", IOContext{Kind: IOFlush, EstimatedSize: 5000}, 5000, false},
		{"_3.commit", IOContext{Kind: IOCommit, EstimatedSize: 10}, 10, false},
		{"_4.unknown-merge", IOContext{Kind: IOMerge}, 10, false},
		{"_5.cache-full", IOContext{Kind: IOFlush, EstimatedSize: 900}, 900, false}, // 1700+900 > 2500
		{"_6.fits", IOContext{Kind: IOFlush, EstimatedSize: 500}, 500, true},
	}
	contents := map[string][]byte{}
	for _, tc := range tests {
		data := randBytes(r, tc.size)
		writeFile(t, d, tc.name, data, tc.ctx, r)
		contents[tc.name] = data
		_, err := os.Stat(filepath.Join(tmp, tc.name))
		if onDisk := err == nil; onDisk == tc.cached {
			t.Fatalf("%s: on disk = %v, want cached = %v", tc.name, onDisk, tc.cached)
		}
	}
	st := d.Stats()
	if st.CachedBytes != 800+900+500 || len(st.CachedFiles) != 3 || st.CachedOutputs != 3 || st.UncachedOutputs != 4 {
		t.Fatalf("stats %+v", st)
	}
	names, _ := d.ListAll()
	if len(names) != len(tests) {
		t.Fatalf("ListAll %v", names)
	}
	// A reader of a cached file keeps working across sync-through.
	in, err := d.OpenInput("_0.small-flush")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Sync([]string{"_0.small-flush", "_2.big-flush"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(tmp, "_0.small-flush")); err != nil {
		t.Fatal("synced file not written through to disk")
	}
	if d.Stats().CachedBytes != 900+500 {
		t.Fatalf("cache not released after sync: %+v", d.Stats())
	}
	if !bytes.Equal(in.Bytes(), contents["_0.small-flush"]) {
		t.Fatal("cached reader changed")
	}
	in.Close()
	for name, data := range contents {
		in, err := d.OpenInput(name)
		if err != nil || !bytes.Equal(in.Bytes(), data) {
			t.Fatalf("%s: %v", name, err)
		}
		in.Close()
	}
	if err := d.DeleteFile("_1.small-merge"); err != nil {
		t.Fatal(err)
	}
	if d.Stats().CachedBytes != 500 {
		t.Fatalf("delete did not release cache: %+v", d.Stats())
	}
	if _, err := d.CreateOutput("_2.big-flush", IOContext{Kind: IOFlush, EstimatedSize: 1}); err == nil {
		t.Fatal("created a cached file shadowing a delegate file")
	}
	// Close writes the rest through.
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(tmp, "_6.fits")); err != nil {
		t.Fatal("Close did not write cached files through")
	}
}

func TestConcurrentUse(t *testing.T) {
	for _, dc := range dirCases() {
		t.Run(dc.name, func(t *testing.T) {
			d := dc.open(t)
			defer d.Close()
			var wg sync.WaitGroup
			errs := make(chan error, 64)
			for g := 0; g < 4; g++ {
				wg.Add(1)
				go func(g int) {
					defer wg.Done()
					r := rand.New(rand.NewPCG(uint64(g), 9))
					for i := 0; i < 30; i++ {
						name := fmt.Sprintf("_%d_%d.x", g, i)
						data := randBytes(r, r.IntN(5000))
						out, err := d.CreateOutput(name, IOContext{Kind: IOFlush, EstimatedSize: int64(len(data))})
						if err != nil {
							errs <- err
							return
						}
						out.Write(data)
						out.Close()
						in, err := d.OpenInput(name)
						if err != nil {
							errs <- err
							return
						}
						if i%3 == 0 {
							if err := d.Sync([]string{name}); err != nil {
								errs <- err
								return
							}
						}
						if !bytes.Equal(in.Bytes(), data) {
							errs <- fmt.Errorf("%s content differs", name)
						}
						in.Close()
						if _, err := d.ListAll(); err != nil {
							errs <- err
						}
						if i%2 == 0 {
							if err := d.DeleteFile(name); err != nil {
								errs <- err
							}
						}
					}
				}(g)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			names, _ := d.ListAll()
			if len(names) != 4*15 {
				t.Fatalf("%d files left, want %d", len(names), 4*15)
			}
		})
	}
}

func BenchmarkCRC32(b *testing.B) {
	data := make([]byte, 64<<10)
	for _, tc := range []struct {
		name  string
		table *crc32.Table
	}{{"IEEE", crc32.IEEETable}, {"Castagnoli", crc32.MakeTable(crc32.Castagnoli)}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				crc32.Update(0, tc.table, data)
			}
		})
	}
}

func BenchmarkFSWrite(b *testing.B) {
	d, _ := NewFSDirectory(b.TempDir())
	chunk := make([]byte, 4096)
	b.SetBytes(int64(len(chunk)) * 256)
	i := 0
	for b.Loop() {
		out, _ := d.CreateOutput(fmt.Sprint(i), IOContext{})
		for j := 0; j < 256; j++ {
			out.Write(chunk)
		}
		out.Close()
		d.DeleteFile(fmt.Sprint(i))
		i++
	}
}
