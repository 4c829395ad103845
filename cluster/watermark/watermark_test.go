package watermark

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluice-search/sluice/cluster/state"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

const gb = 1 << 30

func TestParse(t *testing.T) {
	tests := []struct {
		in        string
		used      float64
		freeBytes int64
		bad       bool
	}{
		{in: "85%", used: 0.85},
		{in: " 90.5% ", used: 0.905},
		{in: "0.95", used: 0.95},
		{in: "1", used: 1},
		{in: "20gb", used: -1, freeBytes: 20 * gb},
		{in: "500MB", used: -1, freeBytes: 500 << 20},
		{in: "1.5kb", used: -1, freeBytes: 1536},
		{in: "1024b", used: -1, freeBytes: 1024},
		{in: "101%", bad: true},
		{in: "-1%", bad: true},
		{in: "2", bad: true},
		{in: "lots", bad: true},
		{in: "-5gb", bad: true},
		{in: "1e300gb", bad: true}, // past int64: no wrap to a negative free space
		{in: "9000pb", bad: true},
		{in: "", bad: true},
	}
	for _, tt := range tests {
		got, err := Parse("disk_watermark_low", tt.in)
		if tt.bad {
			if !errors.Is(err, state.ErrInvalid) || !strings.Contains(err.Error(), "disk_watermark_low") {
				t.Errorf("Parse(%q) = %+v, %v; want an invalid error naming the field", tt.in, got, err)
			}
			continue
		}
		if err != nil || got.Used != tt.used || got.FreeBytes != tt.freeBytes {
			t.Errorf("Parse(%q) = %+v, %v; want used %v, free %d", tt.in, got, err, tt.used, tt.freeBytes)
		}
	}
}

func TestFromSettings(t *testing.T) {
	tests := []struct {
		name string
		s    *sluicev1.ClusterSettings
		bad  string // a part of the error
	}{
		{name: "defaults"},
		{name: "shares", s: &sluicev1.ClusterSettings{DiskWatermarkLow: "70%", DiskWatermarkHigh: "0.8", DiskWatermarkFloodStage: "90%"}},
		{name: "free spaces", s: &sluicev1.ClusterSettings{DiskWatermarkLow: "30gb", DiskWatermarkHigh: "20gb", DiskWatermarkFloodStage: "10gb"}},
		{name: "mixed", s: &sluicev1.ClusterSettings{DiskWatermarkLow: "30gb"}, bad: "all be shares"},
		{name: "low above high", s: &sluicev1.ClusterSettings{DiskWatermarkLow: "92%"}, bad: "low ≤ high"},
		{name: "free low below high", s: &sluicev1.ClusterSettings{DiskWatermarkLow: "1gb", DiskWatermarkHigh: "2gb", DiskWatermarkFloodStage: "1gb"}, bad: "low ≤ high"},
	}
	for _, tt := range tests {
		_, err := FromSettings(tt.s)
		if (err != nil) != (tt.bad != "") || err != nil && !strings.Contains(err.Error(), tt.bad) {
			t.Errorf("%s: FromSettings = %v, want error with %q", tt.name, err, tt.bad)
		}
	}
}

func TestLevel(t *testing.T) {
	w := Defaults()
	abs, err := FromSettings(&sluicev1.ClusterSettings{DiskWatermarkLow: "30gb", DiskWatermarkHigh: "20gb", DiskWatermarkFloodStage: "10gb"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		w           Watermarks
		free, total int64
		want        sluicev1.DiskWatermark
	}{
		{w, 0, 0, sluicev1.DiskWatermark_DISK_WATERMARK_UNSPECIFIED},
		{w, 50, 100, sluicev1.DiskWatermark_DISK_WATERMARK_OK},
		{w, 15, 100, sluicev1.DiskWatermark_DISK_WATERMARK_OK}, // exactly 85%: not past
		{w, 14, 100, sluicev1.DiskWatermark_DISK_WATERMARK_LOW},
		{w, 9, 100, sluicev1.DiskWatermark_DISK_WATERMARK_HIGH},
		{w, 4, 100, sluicev1.DiskWatermark_DISK_WATERMARK_FLOOD_STAGE},
		{abs, 40 * gb, 1000 * gb, sluicev1.DiskWatermark_DISK_WATERMARK_OK},
		{abs, 25 * gb, 1000 * gb, sluicev1.DiskWatermark_DISK_WATERMARK_LOW},
		{abs, 15 * gb, 1000 * gb, sluicev1.DiskWatermark_DISK_WATERMARK_HIGH},
		{abs, 5 * gb, 1000 * gb, sluicev1.DiskWatermark_DISK_WATERMARK_FLOOD_STAGE},
	}
	for _, tt := range tests {
		if got := tt.w.Level(tt.free, tt.total); got != tt.want {
			t.Errorf("Level(%d of %d) = %v, want %v", tt.free, tt.total, got, tt.want)
		}
	}
	want := "disk of node [n1] at /data is 96.0% used (4b free of 100b), past the flood-stage disk watermark [95%]"
	if got := w.Reason("n1", "/data", 4, 100); got != want {
		t.Errorf("Reason = %q, want %q", got, want)
	}
	if got := w.Reason("n1", "/data", 50, 100); got != "" {
		t.Errorf("Reason below low = %q", got)
	}
}
