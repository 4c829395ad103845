package main

import "testing"

func TestByteSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  bool
	}{
		{"1048576", 1 << 20, false},
		{"20MiB", 20 << 20, false},
		{"20M", 20 << 20, false},
		{"64MB", 64e6, false},
		{"1.5GiB", 3 << 29, false},
		{"512k", 512 << 10, false},
		{"10 KiB", 10 << 10, false},
		{"0", 0, false},
		{"-1", -1, false},
		{"-1MiB", 0, true},
		{"lots", 0, true},
		{"MiB", 0, true},
	}
	for _, tt := range tests {
		var b byteSize
		err := b.Set(tt.in)
		if (err != nil) != tt.err || !tt.err && int64(b) != tt.want {
			t.Errorf("%q: %d, %v; want %d (error %v)", tt.in, b, err, tt.want, tt.err)
		}
	}
	for n, want := range map[int64]string{20 << 20: "20MiB", 3 << 29: "1.5GiB", 512: "512B", -1: "-1", 0: "0B"} {
		if got := formatBytes(n); got != want {
			t.Errorf("formatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
