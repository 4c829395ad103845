// Package watermark holds the disk watermarks, as Elasticsearch's
// cluster.routing.allocation.disk.watermark.{low,high,flood_stage}: a
// threshold is either a share of the disk used ("85%", "0.85") or an
// amount of free space left ("20gb", "500mb"; Elasticsearch's units, powers
// of 1024), and a data node's disk is past it when its usage is above the
// share or its free space below the amount.
//
// What each watermark does is the allocator's and the data path's
// (coordinator/allocator, docs/operations.md): past low a node takes no new
// replica copies, past high no copies at all and its copies are moved
// away, past the flood stage every index with a copy on it refuses writes
// until every node holding a copy is below high again.
package watermark

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/sluice-search/sluice/cluster/state"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// The defaults, Elasticsearch's.
const (
	DefaultLow   = "85%"
	DefaultHigh  = "90%"
	DefaultFlood = "95%"
)

// Threshold is one watermark.
type Threshold struct {
	// Used is the share of the disk used past which the threshold is
	// passed (0..1), or -1 when FreeBytes is set instead.
	Used float64
	// FreeBytes is the free space below which the threshold is passed,
	// when Used is -1.
	FreeBytes int64
	text      string
}

// String is the threshold as written.
func (t Threshold) String() string { return t.text }

// ratio reports whether t is a share of the disk (not an amount free).
func (t Threshold) ratio() bool { return t.Used >= 0 }

// Passed reports whether a disk with free of total bytes is past t. A disk
// that did not report (total 0) is past nothing.
func (t Threshold) Passed(free, total int64) bool {
	if total <= 0 {
		return false
	}
	if t.ratio() {
		return float64(total-free)/float64(total) > t.Used
	}
	return free < t.FreeBytes
}

// byteUnits are Elasticsearch's byte size units, longest first so "kb" is
// not read as "b".
var byteUnits = []struct {
	suffix string
	mult   float64
}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"tb", 1 << 40}, {"pb", 1 << 50}, {"b", 1}}

// Parse reads a threshold: "85%" or "0.85" (a share of the disk used) or a
// byte size of free space ("20gb", "500mb", "1024b"). field names the
// setting in the error.
func Parse(field, s string) (Threshold, error) {
	text := strings.TrimSpace(s)
	v := strings.ToLower(text)
	bad := func() (Threshold, error) {
		return Threshold{}, state.InvalidFieldf(field, "%s: %q is neither a share of the disk used (\"85%%\", \"0.85\") nor a free space (\"20gb\", \"500mb\")", field, s)
	}
	if num, ok := strings.CutSuffix(v, "%"); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if err != nil || f < 0 || f > 100 || math.IsNaN(f) {
			return bad()
		}
		return Threshold{Used: f / 100, text: text}, nil
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if f < 0 || f > 1 || math.IsNaN(f) {
			return bad()
		}
		return Threshold{Used: f, text: text}, nil
	}
	for _, u := range byteUnits {
		if num, ok := strings.CutSuffix(v, u.suffix); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
			// Past int64, the conversion would wrap to a negative free
			// space no disk is below.
			if err != nil || f < 0 || math.IsNaN(f) || f*u.mult >= math.MaxInt64 {
				return bad()
			}
			return Threshold{Used: -1, FreeBytes: int64(f * u.mult), text: text}, nil
		}
	}
	return bad()
}

// Watermarks are the three thresholds in force.
type Watermarks struct {
	Low, High, Flood Threshold
}

// FromSettings reads the watermarks of the cluster settings (nil: the
// defaults) and checks they are consistent: all shares or all free
// spaces (as Elasticsearch requires), low ≤ high ≤ flood stage.
func FromSettings(s *sluicev1.ClusterSettings) (Watermarks, error) {
	var w Watermarks
	var err error
	for _, f := range []struct {
		field, value, def string
		dst               *Threshold
	}{
		{"disk_watermark_low", s.GetDiskWatermarkLow(), DefaultLow, &w.Low},
		{"disk_watermark_high", s.GetDiskWatermarkHigh(), DefaultHigh, &w.High},
		{"disk_watermark_flood_stage", s.GetDiskWatermarkFloodStage(), DefaultFlood, &w.Flood},
	} {
		v := f.value
		if v == "" {
			v = f.def
		}
		if *f.dst, err = Parse(f.field, v); err != nil {
			return Watermarks{}, err
		}
	}
	if w.Low.ratio() != w.High.ratio() || w.High.ratio() != w.Flood.ratio() {
		return Watermarks{}, state.InvalidFieldf("disk_watermark_low", "disk watermarks must all be shares of the disk used or all free spaces, got low %s, high %s, flood stage %s", w.Low, w.High, w.Flood)
	}
	ordered := w.Low.Used <= w.High.Used && w.High.Used <= w.Flood.Used
	if !w.Low.ratio() {
		ordered = w.Low.FreeBytes >= w.High.FreeBytes && w.High.FreeBytes >= w.Flood.FreeBytes
	}
	if !ordered {
		return Watermarks{}, state.InvalidFieldf("disk_watermark_high", "disk watermarks must be low ≤ high ≤ flood stage, got low %s, high %s, flood stage %s", w.Low, w.High, w.Flood)
	}
	return w, nil
}

// Defaults are the default watermarks.
func Defaults() Watermarks {
	w, err := FromSettings(nil)
	if err != nil {
		panic(err) // the constants parse
	}
	return w
}

// Level says which watermark a disk with free of total bytes is past.
func (w Watermarks) Level(free, total int64) sluicev1.DiskWatermark {
	switch {
	case total <= 0:
		return sluicev1.DiskWatermark_DISK_WATERMARK_UNSPECIFIED
	case w.Flood.Passed(free, total):
		return sluicev1.DiskWatermark_DISK_WATERMARK_FLOOD_STAGE
	case w.High.Passed(free, total):
		return sluicev1.DiskWatermark_DISK_WATERMARK_HIGH
	case w.Low.Passed(free, total):
		return sluicev1.DiskWatermark_DISK_WATERMARK_LOW
	}
	return sluicev1.DiskWatermark_DISK_WATERMARK_OK
}

// Reason says, for a person, where node's disk stands when it is past a
// watermark ("" when it is not): the node, its data path, the usage and
// the watermark passed.
func (w Watermarks) Reason(node, path string, free, total int64) string {
	var name string
	var t Threshold
	switch w.Level(free, total) {
	case sluicev1.DiskWatermark_DISK_WATERMARK_FLOOD_STAGE:
		name, t = "flood-stage", w.Flood
	case sluicev1.DiskWatermark_DISK_WATERMARK_HIGH:
		name, t = "high", w.High
	case sluicev1.DiskWatermark_DISK_WATERMARK_LOW:
		name, t = "low", w.Low
	default:
		return ""
	}
	if path == "" {
		path = "its data path"
	}
	return fmt.Sprintf("disk of node [%s] at %s is %.1f%% used (%s free of %s), past the %s disk watermark [%s]",
		node, path, 100*float64(total-free)/float64(total), Bytes(free), Bytes(total), name, t)
}

// Bytes writes n in the largest binary unit that keeps it at least 1
// (Elasticsearch's style: 1.5gb, 512mb, 10b).
func Bytes(n int64) string {
	units := []string{"b", "kb", "mb", "gb", "tb", "pb"}
	f, i := float64(n), 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if f == math.Trunc(f) {
		return fmt.Sprintf("%d%s", int64(f), units[i])
	}
	return fmt.Sprintf("%.1f%s", f, units[i])
}

// Effective returns the settings with every empty watermark set to its
// default (a clone; s is not changed).
func Effective(s *sluicev1.ClusterSettings) *sluicev1.ClusterSettings {
	out := proto.Clone(s).(*sluicev1.ClusterSettings)
	if s == nil {
		out = &sluicev1.ClusterSettings{}
	}
	out.DiskWatermarkLow = cmp.Or(out.DiskWatermarkLow, DefaultLow)
	out.DiskWatermarkHigh = cmp.Or(out.DiskWatermarkHigh, DefaultHigh)
	out.DiskWatermarkFloodStage = cmp.Or(out.DiskWatermarkFloodStage, DefaultFlood)
	return out
}

// Nodes returns every live node of st as the API shows it, with where its
// disk stands against the watermarks in force (stored settings that do
// not parse count as the defaults), sorted by id.
func Nodes(st *state.Snapshot) []*sluicev1.NodeInfo {
	w, err := FromSettings(st.Settings)
	if err != nil {
		w = Defaults()
	}
	out := make([]*sluicev1.NodeInfo, 0, len(st.Nodes))
	for _, n := range st.Nodes {
		info := state.NodeInfo(n)
		info.DiskWatermark = w.Level(info.DiskFreeBytes, info.DiskTotalBytes)
		info.DiskReason = w.Reason(info.Id, info.DataPath, info.DiskFreeBytes, info.DiskTotalBytes)
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b *sluicev1.NodeInfo) int { return cmp.Compare(a.Id, b.Id) })
	return out
}

// Ignored are watermarks no disk passes (free space below one byte), for
// test clusters whose nodes share the host's disk: Elasticsearch's test
// clusters set theirs so, so that how full the host's disk is does not
// decide where shards go.
func Ignored() *sluicev1.ClusterSettings {
	return &sluicev1.ClusterSettings{DiskWatermarkLow: "1b", DiskWatermarkHigh: "1b", DiskWatermarkFloodStage: "1b"}
}
