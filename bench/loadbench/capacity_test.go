package loadbench

import (
	"testing"

	"github.com/sluice-search/sluice/bench/report"
)

func TestCapacity(t *testing.T) {
	lv := func(qps, achieved, p99 float64, errs int64) Level {
		return Level{OfferedQPS: qps, AchievedQPS: achieved, Errors: errs, Latency: report.Latencies{P99: p99}}
	}
	for _, tc := range []struct {
		name   string
		levels []Level
		want   float64
	}{
		{"none", nil, 0},
		{"all within", []Level{lv(100, 100, 5, 0), lv(200, 200, 9, 0)}, 200},
		{"first breaks", []Level{lv(100, 100, 60, 0), lv(200, 200, 9, 0)}, 0},
		{"a lucky level above a broken one", []Level{lv(100, 100, 5, 0), lv(200, 200, 90, 0), lv(400, 400, 20, 0)}, 100},
		{"falls behind", []Level{lv(100, 100, 5, 0), lv(200, 150, 9, 0)}, 100},
		{"errors", []Level{lv(100, 100, 5, 0), lv(200, 200, 9, 1)}, 100},
		{"given out of order", []Level{lv(400, 400, 80, 0), lv(100, 100, 5, 0), lv(200, 200, 9, 0)}, 200},
	} {
		if got := capacity(tc.levels, 50); got != tc.want {
			t.Errorf("%s: capacity %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestHalfCapacity(t *testing.T) {
	lv := func(qps, p50, p99 float64, base *report.Latencies) Level {
		return Level{OfferedQPS: qps, Latency: report.Latencies{P50: p50, P99: p99}, Baseline: base}
	}
	levels := []Level{lv(400, 1, 2, nil), lv(800, 1, 4, &report.Latencies{P50: 0.5, P99: 5}), lv(1600, 1, 9, nil)}
	tests := []struct {
		capacity  float64
		want      float64 // offered qps of the pick, 0 for none
		ratio     float64
		baseRatio float64
	}{
		{capacity: 1600, want: 800, ratio: 4, baseRatio: 10},
		{capacity: 1000, want: 400, ratio: 2},  // 500 ± 125 holds 400
		{capacity: 2400, want: 0},              // 1200 ± 300: no level
		{capacity: 3200, want: 1600, ratio: 9}, // exact
	}
	for _, tc := range tests {
		h := halfCapacity(levels, tc.capacity)
		if tc.want == 0 {
			if h != nil {
				t.Errorf("capacity %v: picked %+v, want none", tc.capacity, h)
			}
			continue
		}
		if h == nil || h.OfferedQPS != tc.want || h.Ratio != tc.ratio || h.BaselineRatio != tc.baseRatio {
			t.Errorf("capacity %v: %+v, want %v qps ratio %v baseline %v", tc.capacity, h, tc.want, tc.ratio, tc.baseRatio)
		}
	}
}
