package report

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	var s []time.Duration
	for i := 100; i >= 1; i-- { // unsorted on purpose
		s = append(s, time.Duration(i)*time.Millisecond)
	}
	l := Summarize(s)
	want := Latencies{Count: 100, Mean: 50.5, P50: 50, P90: 90, P99: 99, P999: 100, Max: 100}
	if l != want {
		t.Fatalf("got %+v want %+v", l, want)
	}
	if (Summarize(nil) != Latencies{}) {
		t.Fatal("empty summary not zero")
	}
	one := Summarize([]time.Duration{7 * time.Millisecond})
	if one.P50 != 7 || one.P999 != 7 {
		t.Fatalf("single sample: %+v", one)
	}
}

func TestPlotsAreValidPNGs(t *testing.T) {
	dir := t.TempDir()
	lp := filepath.Join(dir, "line.png")
	if err := LinePlot(lp, "t", "x", "y", true,
		Series{Name: "a", X: []float64{0, 1, 2}, Y: []float64{1, 10, 0}},
		Series{Name: "b", X: []float64{0, 1, 2}, Y: []float64{2, 3, 4}}); err != nil {
		t.Fatal(err)
	}
	bp := filepath.Join(dir, "bar.png")
	if err := BarChart(bp, "t", "docs/s", Bar{"a", 3}, Bar{"b", 30}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{lp, bp} {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil || img.Bounds().Dx() < 100 {
			t.Fatalf("%s: not a usable PNG: %v", p, err)
		}
	}
}

func TestRSS(t *testing.T) {
	rss, err := RSS()
	if err != nil || rss <= 0 {
		t.Fatalf("RSS %d %v", rss, err)
	}
	if err := ResetPeakRSS(); err != nil {
		t.Logf("clear_refs unsupported here: %v", err)
	}
	peak, err := PeakRSS()
	if err != nil || peak < rss/2 {
		t.Fatalf("peak %d rss %d %v", peak, rss, err)
	}
}
