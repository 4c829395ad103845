//go:build race

package codec

// raceEnabled shrinks the randomized tests: the race detector slows the
// decoders ~10x and CI runs every package with -race.
const raceEnabled = true
