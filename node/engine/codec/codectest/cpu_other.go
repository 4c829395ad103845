//go:build !linux

package codectest

// ThreadCPU is 0 where per-thread CPU time is not available; benchmarks
// then report no CPU metric.
func ThreadCPU() int64 { return 0 }
