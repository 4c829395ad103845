package node

import (
	"errors"
	"testing"
)

// A fake statfs: the monitor asks for the registration to be rewritten
// only when free space moved by reportStep of the disk since it was last
// registered, and keeps its figures when statfs fails.
func TestDiskMonitor(t *testing.T) {
	free, total := int64(600_000), int64(1_000_000)
	var fail error
	m := newDiskMonitor("/data", 0, func(dir string) (int64, int64, error) {
		if dir != "/data" {
			t.Errorf("statfs of %q", dir)
		}
		return free, total, fail
	}, func() {})
	if f, tot := m.usage(); f != 600_000 || tot != 1_000_000 {
		t.Fatalf("usage = %d, %d", f, tot)
	}
	steps := []struct {
		free    int64
		fail    error
		refresh bool
		report  int64 // free bytes registered after the step
	}{
		{free: 597_000, report: 600_000},                // 0.3%: quiet
		{free: 594_000, refresh: true, report: 594_000}, // 0.6% since registered
		{free: 590_000, fail: errors.New("EIO"), report: 594_000},
		{free: 596_000, report: 594_000},
		{free: 10_000, refresh: true, report: 10_000}, // filled up
		{free: 700_000, refresh: true, report: 700_000},
	}
	for i, s := range steps {
		free, fail = s.free, s.fail
		if got := m.measure(); got != s.refresh {
			t.Errorf("step %d: refresh = %v, want %v", i, got, s.refresh)
		}
		if s.refresh {
			m.usage() // the registration is rewritten
		}
		if m.reported != s.report {
			t.Errorf("step %d: registered free %d, want %d", i, m.reported, s.report)
		}
	}
}
