package mergescheduler

import (
	"errors"
	"io"
	"math"
	"sync"
	"testing"
	"time"
)

// Timing tests run on small, shared machines: lower bounds are firm (a
// limiter must never let writes through faster than the rate), upper bounds
// are loose (the scheduler may be slow to wake us).

// writeAll writes total bytes in chunks through w, returning the first error.
func writeAll(w io.Writer, total, chunk int) error {
	buf := make([]byte, chunk)
	for written := 0; written < total; written += chunk {
		if _, err := w.Write(buf[:min(chunk, total-written)]); err != nil {
			return err
		}
	}
	return nil
}

func TestRateLimiterCheckBytes(t *testing.T) {
	tests := []struct {
		mbPerSec float64
		want     int64
	}{
		{math.Inf(1), 1 << 20},
		{0, 1 << 20},
		{-3, 1 << 20},
		{100, 1 << 20},            // 25 ms at 100 MiB/s = 2.5 MiB, capped
		{20, 25 * (1 << 20) / 50}, // 25 ms at 20 MiB/s = 512 KiB
		{1, 26214},                // 25 ms at 1 MiB/s
	}
	for _, tt := range tests {
		rl := NewRateLimiter(tt.mbPerSec)
		if got := rl.MinPauseCheckBytes(); got != tt.want {
			t.Errorf("rate %v: check bytes %d, want %d", tt.mbPerSec, got, tt.want)
		}
	}
}

func TestRateLimiterAccuracy(t *testing.T) {
	tests := []struct {
		name     string
		mbPerSec float64
		bytes    int
		chunk    int
		writers  int
	}{
		{"4 MiB at 20 MiB/s", 20, 4 << 20, 64 << 10, 1},
		{"6 MiB at 60 MiB/s in 1 MiB writes", 60, 6 << 20, 1 << 20, 1},
		{"3 writers share 40 MiB/s", 40, 2 << 20, 32 << 10, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rl := NewRateLimiter(tt.mbPerSec)
			total := tt.bytes * tt.writers
			start := time.Now()
			var wg sync.WaitGroup
			for range tt.writers {
				wg.Go(func() {
					if err := writeAll(rl.Writer(io.Discard), tt.bytes, tt.chunk); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			ideal := time.Duration(float64(total) / mib / tt.mbPerSec * float64(time.Second))
			// The first check of each writer is free (nothing to pace
			// against yet) and each check may skip up to minPause.
			check := rl.MinPauseCheckBytes()
			checks := int64(total) / check
			free := time.Duration(float64(int64(tt.writers)*max(check, int64(tt.chunk)))/mib/tt.mbPerSec*float64(time.Second)) +
				time.Duration(checks)*minPause
			lower := ideal - free
			t.Logf("elapsed %v, ideal %v, lower bound %v, stats %+v", elapsed, ideal, lower, rl.Stats())
			if elapsed < lower {
				t.Fatalf("wrote %d bytes in %v, faster than %v MiB/s allows (>= %v)", total, elapsed, tt.mbPerSec, lower)
			}
			if elapsed > 4*ideal+time.Second {
				t.Fatalf("took %v, far over the ideal %v", elapsed, ideal)
			}
			st := rl.Stats()
			if st.BytesWritten != int64(total) {
				t.Fatalf("bytes written %d, want %d", st.BytesWritten, total)
			}
			if st.Paused < lower/time.Duration(tt.writers) {
				t.Fatalf("paused %v, want >= %v", st.Paused, lower/time.Duration(tt.writers))
			}
		})
	}
}

func TestRateLimiterUnlimited(t *testing.T) {
	for _, rate := range []float64{0, math.Inf(1)} {
		rl := NewRateLimiter(rate)
		if err := writeAll(rl.Writer(io.Discard), 64<<20, 256<<10); err != nil {
			t.Fatal(err)
		}
		if st := rl.Stats(); st.Paused != 0 || st.BytesWritten != 64<<20 {
			t.Fatalf("rate %v: stats %+v, want no pauses", rate, st)
		}
	}
}

// sleepingWrite starts a write that must sleep about 2 s at 1 MiB/s and
// returns a channel with its result.
func sleepingWrite(t *testing.T, rl *RateLimiter) <-chan error {
	t.Helper()
	w := rl.Writer(io.Discard)
	// The first check only sets the pace.
	if _, err := w.Write(make([]byte, 2<<20)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := w.Write(make([]byte, 2<<20))
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("write returned early: %v", err)
	default:
	}
	return done
}

func TestRateLimiterWakeups(t *testing.T) {
	tests := []struct {
		name    string
		act     func(rl *RateLimiter)
		wantErr error
	}{
		{"abort while sleeping", (*RateLimiter).Abort, ErrMergeAborted},
		{"rate raised while sleeping", func(rl *RateLimiter) { rl.SetMBPerSec(math.Inf(1)) }, nil},
		{"abort while stopped", func(rl *RateLimiter) { rl.setStopped(true); time.Sleep(20 * time.Millisecond); rl.Abort() }, ErrMergeAborted},
		{"resume after stop", func(rl *RateLimiter) {
			rl.setStopped(true)
			rl.SetMBPerSec(0)
			time.Sleep(20 * time.Millisecond)
			rl.setStopped(false)
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rl := NewRateLimiter(1)
			done := sleepingWrite(t, rl)
			start := time.Now()
			tt.act(rl)
			select {
			case err := <-done:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
			case <-time.After(time.Second):
				t.Fatal("write still sleeping 1 s later (of 2 s)")
			}
			t.Logf("returned %v after the action", time.Since(start))
			if tt.wantErr != nil {
				if _, err := rl.Writer(io.Discard).Write([]byte{1}); !errors.Is(err, ErrMergeAborted) {
					t.Fatalf("write after abort: %v", err)
				}
				if _, err := rl.Pause(1); !errors.Is(err, ErrMergeAborted) {
					t.Fatalf("pause after abort: %v", err)
				}
			}
		})
	}
}

func TestRateLimiterStoppedBlocks(t *testing.T) {
	rl := NewRateLimiter(0)
	rl.setStopped(true)
	done := make(chan error, 1)
	go func() { _, err := rl.Pause(1); done <- err }()
	select {
	case err := <-done:
		t.Fatalf("pause returned while stopped: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	rl.setStopped(false)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st := rl.Stats(); st.Stopped < 90*time.Millisecond {
		t.Fatalf("stopped time %v, want >= 90ms", st.Stopped)
	}
}

func TestRateLimitedWriterAllocs(t *testing.T) {
	w := NewRateLimiter(0).Writer(io.Discard)
	buf := make([]byte, 4096)
	if n := testing.AllocsPerRun(1000, func() { _, _ = w.Write(buf) }); n != 0 {
		t.Fatalf("%v allocs per Write, want 0", n)
	}
}

// BenchmarkRateLimitedWriter measures the per-Write overhead when no sleep
// is needed: the common path is two atomic loads and an atomic add, with a
// mutex and a clock read once per MiB.
func BenchmarkRateLimitedWriter(b *testing.B) {
	w := NewRateLimiter(0).Writer(io.Discard)
	buf := make([]byte, 4096)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := w.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
}
