package codec

import "encoding/binary"

func appendUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }
func appendU32(b []byte, v uint32) []byte     { return binary.LittleEndian.AppendUint32(b, v) }
func appendU64(b []byte, v uint64) []byte     { return binary.LittleEndian.AppendUint64(b, v) }
