package datapath

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
)

// pitShard is one pinned shard reader of a point-in-time.
type pitShard struct {
	index, uuid, node string
	shard             int
	reader            uint64
}

const pitVersion = 1

// encodePIT serializes the pinned shards: version, count, then per shard
// length-prefixed index, uuid and node, and uvarint shard and reader id.
func encodePIT(ss []pitShard) string {
	b := []byte{pitVersion}
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		for _, str := range []string{s.index, s.uuid, s.node} {
			b = binary.AppendUvarint(b, uint64(len(str)))
			b = append(b, str...)
		}
		b = binary.AppendUvarint(b, uint64(s.shard))
		b = binary.AppendUvarint(b, s.reader)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// maxPITShards bounds what a decoded id may claim, so a forged id cannot
// make the decoder allocate without limit.
const maxPITShards = 1 << 16

func decodePIT(id string) ([]pitShard, error) {
	bad := func(why string) error { return invalidf("point-in-time id is malformed: %s", why) }
	b, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil || len(b) == 0 {
		return nil, bad("not base64url")
	}
	if b[0] != pitVersion {
		return nil, bad(fmt.Sprintf("version %d", b[0]))
	}
	b = b[1:]
	uv := func() (uint64, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	n, ok := uv()
	if !ok || n == 0 || n > maxPITShards {
		return nil, bad("shard count")
	}
	out := make([]pitShard, 0, min(n, 64))
	for range n {
		var s pitShard
		for _, dst := range []*string{&s.index, &s.uuid, &s.node} {
			l, ok := uv()
			if !ok || l > uint64(len(b)) {
				return nil, bad("truncated")
			}
			*dst, b = string(b[:l]), b[l:]
		}
		shard, ok1 := uv()
		reader, ok2 := uv()
		if !ok1 || !ok2 || shard > 1<<20 {
			return nil, bad("truncated")
		}
		s.shard, s.reader = int(shard), reader
		out = append(out, s)
	}
	if len(b) != 0 {
		return nil, bad("trailing bytes")
	}
	return out, nil
}
