// Package report turns benchmark measurements into the files `sluice bench`
// leaves behind: exact latency percentiles, a JSON result per experiment and
// PNG plots, plus the process's peak RSS.
package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Latencies summarises a set of recorded durations exactly (every sample is
// kept: benchmark runs record at most a few million).
type Latencies struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean_ms"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p999_ms"`
	Max   float64 `json:"max_ms"`
}

// Summarize computes Latencies of samples (which it sorts in place).
func Summarize(samples []time.Duration) Latencies {
	if len(samples) == 0 {
		return Latencies{}
	}
	slices.Sort(samples)
	var sum time.Duration
	for _, s := range samples {
		sum += s
	}
	return Latencies{
		Count: len(samples),
		Mean:  ms(sum / time.Duration(len(samples))),
		P50:   ms(Percentile(samples, 50)),
		P90:   ms(Percentile(samples, 90)),
		P99:   ms(Percentile(samples, 99)),
		P999:  ms(Percentile(samples, 99.9)),
		Max:   ms(samples[len(samples)-1]),
	}
}

// Percentile returns the nearest-rank percentile p (0..100] of sorted samples.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(p/100*float64(len(sorted))+0.999999999) - 1
	rank = max(0, min(rank, len(sorted)-1))
	return sorted[rank]
}

// Median is the median of v (0 for none); v is left as it was.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// String formats the summary for a terminal.
func (l Latencies) String() string {
	return fmt.Sprintf("n=%d mean=%.2fms p50=%.2fms p90=%.2fms p99=%.2fms p99.9=%.2fms max=%.2fms",
		l.Count, l.Mean, l.P50, l.P90, l.P99, l.P999, l.Max)
}

// WriteJSON writes v as indented JSON to dir/name.
func WriteJSON(dir, name string, v any) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", name, err)
	}
	return os.WriteFile(filepath.Join(dir, name), append(b, '\n'), 0o644)
}

// PeakRSS returns the process's peak resident set size in bytes (VmHWM).
func PeakRSS() (int64, error) { return procStatusBytes("VmHWM:") }

// RSS returns the process's current resident set size in bytes (VmRSS).
func RSS() (int64, error) { return procStatusBytes("VmRSS:") }

// ResetPeakRSS resets VmHWM to the current RSS (Linux clear_refs "5"), so
// each experiment of one run reports its own peak.
func ResetPeakRSS() error {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0o200)
}

func procStatusBytes(key string) (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				return kb << 10, err
			}
		}
	}
	return 0, fmt.Errorf("%s not in /proc/self/status", key)
}
