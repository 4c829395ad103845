package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestWarmSegment(t *testing.T) {
	ctx := context.Background()
	e := openTestEngine(t, Options{RefreshInterval: -1})
	for i := range 50 {
		src := fmt.Sprintf(`{"title":"doc %d about rivers","n":%d,"tag":"t%d"}`, i, i, i%3)
		if _, err := e.Index(ctx, fmt.Appendf(nil, "%d", i), []byte(src)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	r := e.Acquire()
	defer r.Release()
	if len(r.Leaves()) == 0 {
		t.Fatal("no segments")
	}
	for _, l := range r.Leaves() {
		if err := WarmSegment(ctx, l.Reader); err != nil {
			t.Fatalf("warming a healthy segment: %v", err)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := WarmSegment(cctx, l.Reader); !errors.Is(err, context.Canceled) {
			t.Fatalf("warming with a cancelled context: %v", err)
		}
	}
}
