package codectest

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

// Rand returns a randomly seeded rand and logs the seed; the environment
// variable SLUICE_TEST_SEED replays a failure with the seed it printed.
func Rand(t testing.TB) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SLUICE_TEST_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SLUICE_TEST_SEED: %v", err)
		}
		seed = v
	}
	t.Logf("seed %d (replay with SLUICE_TEST_SEED=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// LongMode reports whether SLUICE_TEST_LONG asks for bigger randomized runs.
func LongMode() bool { return os.Getenv("SLUICE_TEST_LONG") != "" }
