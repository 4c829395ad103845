package routing

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

func TestMurmur3Vectors(t *testing.T) {
	// Reference values of MurmurHash3_x86_32 (SMHasher's implementation).
	tests := []struct {
		in   string
		seed uint32
		want uint32
	}{
		{"", 0, 0},
		{"", 1, 0x514E28B7},
		{"", 0xffffffff, 0x81F16F39},
		{"\x00\x00\x00\x00", 0, 0x2362F9DE},
		{"a", 0x9747b28c, 0x7FA09EA6},
		{"aa", 0x9747b28c, 0x5D211726},
		{"aaa", 0x9747b28c, 0x283E0130},
		{"aaaa", 0x9747b28c, 0x5A97808A},
		{"ab", 0x9747b28c, 0x74875592},
		{"abc", 0x9747b28c, 0xC84A62DD},
		{"abcd", 0x9747b28c, 0xF0478627},
		{"Hello, world!", 0x9747b28c, 0x24884CBA},
		{"The quick brown fox jumps over the lazy dog", 0x9747b28c, 0x2FA826CD},
		{"hello", 0, 0x248BFA47},
	}
	for _, tt := range tests {
		if got := Murmur3([]byte(tt.in), tt.seed); got != tt.want {
			t.Errorf("Murmur3(%q, %#x) = %#x, want %#x", tt.in, tt.seed, got, tt.want)
		}
	}
	if Hash("hello") != 0x248BFA47 {
		t.Errorf("Hash(hello) = %#x", Hash("hello"))
	}
}

func TestShard(t *testing.T) {
	tests := []struct {
		name string
		h    uint32
		p    Params
		want int
	}{
		{"one shard", 12345, Params{1, 1}, 0},
		{"positive hash", 7, Params{4, 4}, 3},
		{"negative hash is floorMod", 0xffffffff /* -1 */, Params{4, 4}, 3},
		{"negative hash -4", 0xfffffffc /* -4 */, Params{4, 4}, 0},
		{"routing shards group", 5, Params{2, 8}, 1},           // r=5, 5/4=1
		{"routing shards low", 3, Params{2, 8}, 0},             // r=3, 3/4=0
		{"negative with routing", 0xfffffffd, Params{2, 8}, 1}, // -3 mod 8 = 5
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ShardOfHash(tt.h, tt.p); got != tt.want {
				t.Errorf("ShardOfHash(%d, %+v) = %d, want %d", int32(tt.h), tt.p, got, tt.want)
			}
		})
	}
}

func TestShardSpread(t *testing.T) {
	// Ids spread over shards roughly evenly: no shard gets less than half
	// its share (a sanity check against a broken hash).
	p := Params{Shards: 8, RoutingShards: 64}
	counts := make([]int, p.Shards)
	const n = 80000
	for i := range n {
		counts[Shard(fmt.Sprintf("doc-%d", i), p)]++
	}
	for s, c := range counts {
		if c < n/p.Shards/2 {
			t.Errorf("shard %d got %d of %d docs", s, c, n)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		p  Params
		ok bool
	}{
		{Params{1, 1}, true},
		{Params{3, 6}, true},
		{Params{1024, 1024}, true},
		{Params{0, 0}, false},
		{Params{1025, 1025}, false},
		{Params{4, 2}, false},
		{Params{4, 6}, false},
	}
	for _, tt := range tests {
		if err := tt.p.Validate(); (err == nil) != tt.ok {
			t.Errorf("Validate(%+v) = %v, want ok=%v", tt.p, err, tt.ok)
		}
	}
}

// TestSourceShardMatchesRouting proves the split property with the routing
// function itself: for every document, the destination shard it routes to
// draws from the source shard it routes to.
func TestSourceShardMatchesRouting(t *testing.T) {
	tests := []struct{ src, dst Params }{
		{Params{1, 8}, Params{8, 8}},
		{Params{2, 8}, Params{4, 8}},
		{Params{2, 8}, Params{8, 8}},
		{Params{3, 12}, Params{6, 12}},
		{Params{5, 640}, Params{10, 640}},
		{Params{4, 4}, Params{4, 4}},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v->%v", tt.src, tt.dst), func(t *testing.T) {
			for range 20000 {
				id := fmt.Sprintf("%x", rng.Uint64())
				d := Shard(id, tt.dst)
				s, err := SourceShard(tt.src, tt.dst, d)
				if err != nil {
					t.Fatal(err)
				}
				if want := Shard(id, tt.src); s != want {
					t.Fatalf("id %s: dest shard %d says source %d, routing says %d", id, d, s, want)
				}
			}
		})
	}
}

func TestSourceShardRejects(t *testing.T) {
	tests := []struct{ src, dst Params }{
		{Params{2, 8}, Params{3, 6}}, // routing shards differ
		{Params{4, 8}, Params{2, 8}}, // shrink: a dest shard draws from two sources
		{Params{2, 12}, Params{3, 12}},
	}
	for _, tt := range tests {
		if _, err := SourceShard(tt.src, tt.dst, 0); !errors.Is(err, ErrNotColocatable) {
			t.Errorf("SourceShard(%v, %v) = %v, want ErrNotColocatable", tt.src, tt.dst, err)
		}
	}
}

func BenchmarkShard(b *testing.B) {
	p := Params{Shards: 16, RoutingShards: 1024}
	b.ReportAllocs()
	for b.Loop() {
		_ = Shard("some-document-id-12345", p)
	}
}

func FuzzShard(f *testing.F) {
	// Any routing value and valid params route inside [0, shards).
	f.Add("abc", 3, 3)
	f.Add("", 1, 7)
	f.Fuzz(func(t *testing.T, s string, shards, factor int) {
		shards = 1 + int(uint(shards)%MaxShards)
		p := Params{Shards: shards, RoutingShards: shards * (1 + int(uint(factor)%64))}
		if got := Shard(s, p); got < 0 || got >= shards {
			t.Fatalf("Shard(%q, %+v) = %d", s, p, got)
		}
	})
}
