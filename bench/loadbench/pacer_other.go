//go:build !linux

package loadbench

func newPacer() pacer { return timerPacer{} }
