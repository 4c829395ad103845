//go:build race

package search

// raceEnabled shrinks randomized tests under the race detector, which
// slows them tenfold; CI runs the full set without it too.
const raceEnabled = true
