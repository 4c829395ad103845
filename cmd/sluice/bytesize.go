package main

import (
	"fmt"
	"strconv"
	"strings"
)

// byteSize is a flag holding a byte count, written as a plain number or
// with a unit: 20MiB, 64MB, 1GiB, 512k (k, M, G, T are powers of 1024 with
// or without "iB"; "kB", "MB", "GB", "TB" powers of 1000). A negative
// plain number passes through, for flags where it means "off".
type byteSize int64

var byteUnits = []struct {
	suffix string
	mult   int64
}{
	// Longest first, so "MiB" is not read as "B".
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"k", 1 << 10}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
	{"B", 1},
}

func parseByteSize(s string) (int64, error) {
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range byteUnits {
		if rest, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || (mult != 1 && v < 0) {
		return 0, fmt.Errorf("%q is not a byte size (like 20MiB, 64MB or 1048576)", s)
	}
	return int64(v * float64(mult)), nil
}

func (b *byteSize) Set(s string) error {
	v, err := parseByteSize(s)
	if err != nil {
		return err
	}
	*b = byteSize(v)
	return nil
}

func (b *byteSize) String() string { return formatBytes(int64(*b)) }

func (*byteSize) Type() string { return "bytes" }

// formatBytes writes n in the largest binary unit that keeps it at least
// 1: 20MiB, 1.5GiB, 512B.
func formatBytes(n int64) string {
	if n < 0 {
		return strconv.FormatInt(n, 10)
	}
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	f, i := float64(n), 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if f == float64(int64(f)) {
		return fmt.Sprintf("%d%s", int64(f), units[i])
	}
	return fmt.Sprintf("%.1f%s", f, units[i])
}
