package routing

import "testing"

func TestParseDest(t *testing.T) {
	tests := []struct {
		in      string
		stored  string
		want    string
		keeps   bool
		wantErr bool
	}{
		{"", "t1", "t1", true, false},
		{"keep", "", "", true, false},
		{"keep", "t1", "t1", true, false},
		{"discard", "t1", "", false, false},
		{"=v", "t1", "v", false, false},
		{"=v", "", "v", false, false},
		{"=", "", "", false, true},
		{"Keep", "", "", false, true},
	}
	for _, tt := range tests {
		r, err := ParseDest(tt.in)
		if (err != nil) != tt.wantErr {
			t.Fatalf("%q: err %v", tt.in, err)
		}
		if err != nil {
			continue
		}
		if got := string(r.Of([]byte(tt.stored))); got != tt.want || r.Keeps() != tt.keeps {
			t.Errorf("%q of %q: %q keeps=%v, want %q keeps=%v", tt.in, tt.stored, got, r.Keeps(), tt.want, tt.keeps)
		}
	}
}
