package loadbench

import (
	"context"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// nanoPacer sleeps in nanosleep(2) on a locked thread with minimal timer
// slack. Sleeps are cut into slices of at most 10 ms so a cancelled run
// stops promptly.
type nanoPacer struct{ oldSlack int }

func newPacer() pacer {
	runtime.LockOSThread()
	old, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return timerPacer{}
	}
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0); err != nil {
		runtime.UnlockOSThread()
		return timerPacer{}
	}
	return &nanoPacer{oldSlack: old}
}

func (p *nanoPacer) sleepUntil(ctx context.Context, t time.Time) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		wait := time.Until(t)
		if wait <= 0 {
			return nil
		}
		ts := unix.NsecToTimespec(int64(min(wait, 10*time.Millisecond)))
		if err := unix.Nanosleep(&ts, nil); err != nil && err != unix.EINTR {
			return timerPacer{}.sleepUntil(ctx, t)
		}
	}
}

func (p *nanoPacer) stop() {
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(p.oldSlack), 0, 0, 0)
	runtime.UnlockOSThread()
}
