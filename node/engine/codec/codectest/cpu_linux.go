package codectest

import "golang.org/x/sys/unix"

// ThreadCPU is the calling thread's CPU time in ns, for benchmarks that lock
// their goroutine to a thread: on a machine shared with other builds,
// wall-clock ns/op mostly measures the contention, CPU time the code.
func ThreadCPU() int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
