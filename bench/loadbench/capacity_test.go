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
