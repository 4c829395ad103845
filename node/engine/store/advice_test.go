//go:build linux

package store

import (
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkMmapAdvice measures random page reads of a cold mmap'd file with
// the kernel's default read-ahead vs MADV_RANDOM. The file is evicted from
// the page cache with FADV_DONTNEED (its pages only). It writes 256 MiB, so
// it runs only with SLUICE_BENCH_ADVICE=1.
func BenchmarkMmapAdvice(b *testing.B) {
	if os.Getenv("SLUICE_BENCH_ADVICE") == "" {
		b.Skip("set SLUICE_BENCH_ADVICE=1 (writes a 256 MiB file)")
	}
	d, err := NewFSDirectory(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	const size = 256 << 20
	out, _ := d.CreateOutput("big", IOContext{})
	chunk := make([]byte, 1<<20)
	for i := 0; i < size/len(chunk); i++ {
		out.Write(chunk)
	}
	out.Close()
	d.Sync([]string{"big"})
	for _, tc := range []struct {
		name   string
		advice Advice
	}{{"default", AdviceNormal}, {"random", AdviceRandom}} {
		b.Run(tc.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 1))
			var total time.Duration
			for b.Loop() {
				f, _ := os.Open(d.Path() + "/big")
				unix.Fadvise(int(f.Fd()), 0, size, unix.FADV_DONTNEED)
				f.Close()
				in, err := d.OpenInput("big")
				if err != nil {
					b.Fatal(err)
				}
				if err := Advise(in, tc.advice); err != nil {
					b.Fatal(err)
				}
				data := in.Bytes()
				start := time.Now()
				var sum byte
				for i := 0; i < 2000; i++ {
					sum += data[r.IntN(size)]
				}
				total += time.Since(start)
				in.Close()
				_ = sum
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N)/2000, "ns/random-read")
		})
	}
}
